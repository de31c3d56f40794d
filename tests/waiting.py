"""Waiting on a condition with a deadline, the one way the tests wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

T = TypeVar("T")


def wait_until(found: Callable[[], T], never: str, seconds: float = 60, every: float = 0.05) -> T:
    """``found()`` as soon as it is truthy, asked every ``every`` seconds; AssertionError
    saying what ``never`` happened once ``seconds`` have passed."""
    asking = Retrying(
        stop=stop_after_delay(seconds),
        wait=wait_fixed(every),
        retry=retry_if_result(lambda value: not value),
    )
    try:
        return asking(found)
    except RetryError:
        raise AssertionError(never) from None
