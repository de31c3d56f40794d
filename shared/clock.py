"""Time as an injectable dependency, and the one timestamp format of every record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock: aware UTC now."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """``2026-11-25T22:21:30.123456Z``: sortable and readable in ``aws s3 cp ... -``."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Inverse of :func:`format_time`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
