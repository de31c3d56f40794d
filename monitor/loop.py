"""``bucketdigest monitor``: lease sweeps every ``every`` seconds, and a consistency sweep
every ``reconcile_every`` seconds, until stopped (or once)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bucketdigest.monitor.repair import ReconcileReport, reconcile
from bucketdigest.monitor.sweep import MonitorSettings, SweepReport, sweep
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class MonitorPass:
    """What one pass did: the lease sweep, and the consistency sweep when one was due."""

    sweep: SweepReport
    reconcile: ReconcileReport | None


PASS_SECONDS = 60.0
"""Time between two passes of ``bucketdigest monitor``."""
RECONCILE_SECONDS = 3600.0
"""Time between two consistency sweeps."""


def run_monitor(
    store: Store,
    settings: MonitorSettings,
    *,
    every: float = PASS_SECONDS,
    reconcile_every: float = RECONCILE_SECONDS,
    once: bool = False,
    on_pass: Callable[[MonitorPass], None] = lambda _: None,
    stop: threading.Event | None = None,
) -> None:
    """Run passes until ``stop`` is set (or after one, with ``once``); each is reported to
    ``on_pass``."""
    stop = stop or threading.Event()
    last_reconcile: float | None = None
    while True:
        swept = sweep(store, settings)
        repaired = None
        if last_reconcile is None or time.monotonic() - last_reconcile >= reconcile_every:
            repaired = reconcile(store)
            last_reconcile = time.monotonic()
        on_pass(MonitorPass(swept, repaired))
        if once or stop.wait(every):
            return
