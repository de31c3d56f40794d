"""Run windows: when a worker may claim, across midnight, in local time or UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bucketdigest.shared.windows import RunWindow, Schedule

NIGHT = Schedule.parse(["22:00Z-06:00Z"])


def _at(hour: int, minute: int = 0, day: int = 26) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "open_"), [(_at(21, 59), False), (_at(22), True), (_at(3), True), (_at(6), False)]
)
def test_a_night_window_is_open_across_midnight(now: datetime, open_: bool) -> None:
    assert NIGHT.is_open(now) is open_


def test_when_a_window_closes_and_the_next_opens() -> None:
    assert NIGHT.closes_at(_at(23)) == _at(6, day=27)
    assert NIGHT.closes_at(_at(3)) == _at(6)
    assert NIGHT.closes_at(_at(12)) is None
    assert NIGHT.next_open(_at(12)) == _at(22)
    assert NIGHT.next_open(_at(23)) == _at(23)


def test_several_windows_and_none() -> None:
    two = Schedule.parse(["01:00Z-02:00Z", "12:30Z-13:00Z"])
    assert two.is_open(_at(12, 45)) and not two.is_open(_at(3))
    assert two.next_open(_at(3)) == _at(12, 30)
    assert Schedule().is_open(_at(3)) and Schedule().closes_at(_at(3)) is None


def test_local_windows_follow_the_machine_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")  # UTC+9, no daylight saving
    time.tzset()
    try:
        window = Schedule.parse(["09:00-17:00"])
        assert window.is_open(_at(0)) and not window.is_open(_at(9))
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("text", ["22-06", "22:00-22:00", "25:00-01:00", "22:00Z-06:00", "x"])
def test_a_window_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"window|hour|empty|UTC"):
        RunWindow.parse(text)
