"""A clock a test moves forward, so what waits on time (leases, grace periods) is reached at once
instead of slept for."""

from __future__ import annotations

from datetime import datetime, timedelta

from bucketdigest.shared.clock import utc_now


class MovableClock:
    """Now, plus however far the test has moved it (a store's ``clock``)."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return utc_now() + self.ahead

    def advance(self, seconds: float) -> None:
        self.ahead += timedelta(seconds=seconds)
