"""Run windows: the hours a worker may claim work (``work --run-window 22:00-06:00``, several
allowed), in the machine's local time or, with ``Z``, in UTC. A window whose end is before its
start runs past midnight."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})(Z?)\s*-\s*(\d{1,2}):(\d{2})(Z?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RunWindow:
    start: time
    end: time
    utc: bool = False

    @classmethod
    def parse(cls, text: str) -> RunWindow:
        """``22:00-06:00`` (local time) or ``22:00Z-06:00Z`` (UTC); ValueError otherwise."""
        match = _WINDOW.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a run window like 22:00-06:00 or 22:00Z-06:00Z")
        h1, m1, z1, h2, m2, z2 = match.groups()
        if bool(z1) != bool(z2):
            raise ValueError(f"{text!r}: give both ends in UTC (Z) or both in local time")
        try:
            start, end = time(int(h1), int(m1)), time(int(h2), int(m2))
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc}") from exc
        if start == end:
            raise ValueError(f"{text!r} is empty: its start is its end")
        return cls(start, end, bool(z1))

    def __str__(self) -> str:
        zone = "Z" if self.utc else ""
        return f"{self.start:%H:%M}{zone}-{self.end:%H:%M}{zone}"

    def _local(self, now: datetime) -> datetime:
        return now.astimezone(UTC) if self.utc else now.astimezone()

    def span(self, now: datetime) -> tuple[datetime, datetime]:
        """The occurrence of the window that holds ``now``, or else the next one."""
        here = self._local(now)
        for days in (-1, 0, 1):
            day = (here + timedelta(days=days)).date()
            opens = datetime.combine(day, self.start, here.tzinfo)
            closes = datetime.combine(day, self.end, here.tzinfo)
            if closes <= opens:
                closes += timedelta(days=1)
            if here < closes:
                return opens, closes
        raise AssertionError("a window recurs every day")


@dataclass(frozen=True)
class Schedule:
    """When a worker may claim: inside any of ``windows`` (always, when there are none)."""

    windows: tuple[RunWindow, ...] = ()

    @classmethod
    def parse(cls, texts: Sequence[str]) -> Schedule:
        return cls(tuple(RunWindow.parse(text) for text in texts))

    def is_open(self, now: datetime) -> bool:
        return not self.windows or any(w.span(now)[0] <= now for w in self.windows)

    def closes_at(self, now: datetime) -> datetime | None:
        """When the window holding ``now`` ends (None: always open, or not open now)."""
        ends = [w.span(now)[1] for w in self.windows if w.span(now)[0] <= now]
        return max(ends) if ends else None

    def next_open(self, now: datetime) -> datetime:
        """``now`` if open, else when the next window opens."""
        if self.is_open(now):
            return now
        return min(w.span(now)[0] for w in self.windows)
