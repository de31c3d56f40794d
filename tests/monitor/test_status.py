"""Throughput and the time left, as `status` and the dashboard show them."""

from __future__ import annotations

from bucketdigest.monitor.status import Status, describe_duration, describe_time_left


def _status(todo: int, processing: int, per_minute: list[int]) -> Status:
    counts = {"todo": todo, "processing": processing, "failed": 0, "done": sum(per_minute)}
    return Status(counts=counts, done_per_minute=per_minute)


def test_the_time_left_follows_the_last_hours_rate() -> None:
    status = _status(todo=25, processing=5, per_minute=[1] * 60)
    assert status.rate_per_minute == 1.0
    assert status.eta_seconds == 1800.0
    assert describe_duration(status.eta_seconds) == "30 min"
    assert describe_duration(_status(600, 0, [2] * 60).eta_seconds) == "5 h 00 min"


def test_no_rate_means_no_estimate_and_nothing_left_means_zero() -> None:
    assert _status(todo=3, processing=0, per_minute=[0] * 60).eta_seconds is None
    assert describe_duration(None) == "unknown"
    assert _status(todo=0, processing=0, per_minute=[0] * 60).eta_seconds == 0.0
    assert describe_time_left(0.0) == "nothing left"
    assert describe_duration(20) == describe_time_left(20) == "under a minute"


def test_the_rate_counts_from_the_first_result_of_the_hour() -> None:
    burst = [0] * 54 + [88] * 5 + [86]  # 526 done in the last 6 minutes
    status = _status(todo=880, processing=0, per_minute=burst)
    assert round(status.rate_per_minute, 1) == 87.7
    assert describe_time_left(status.eta_seconds) == "10 min"
