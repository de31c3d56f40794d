"""``bucketdigest monitor``: lease sweeps every ``every`` seconds, a consistency sweep every
``reconcile_every`` seconds and a damage check every ``check_every`` seconds, until stopped
(or once)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bucketdigest.monitor.damage import CHECK_BYTES, DamageReport, check_damage
from bucketdigest.monitor.repair import ReconcileReport, reconcile
from bucketdigest.monitor.sweep import MonitorSettings, SweepReport, sweep
from bucketdigest.shared.bucket_settings import bucket_webhooks
from bucketdigest.shared.config import MONITOR_SECONDS
from bucketdigest.shared.events import DrainReport, drain_events
from bucketdigest.shared.inbox import InboxReport
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class MonitorPass:
    """What one pass did: the lease sweep, and the consistency sweep and damage check when
    they were due."""

    sweep: SweepReport
    reconcile: ReconcileReport | None
    damage: DamageReport | None = None
    events: DrainReport | None = None
    inbox: InboxReport | None = None


PASS_SECONDS = MONITOR_SECONDS
"""Time between two passes of ``bucketdigest monitor``."""
RECONCILE_SECONDS = 3600.0
"""Time between two consistency sweeps."""
CHECK_SECONDS = 600.0
"""Time between two damage checks (each reads up to ``CHECK_BYTES``)."""


def run_monitor(
    store: Store,
    settings: MonitorSettings,
    *,
    every: float = PASS_SECONDS,
    reconcile_every: float = RECONCILE_SECONDS,
    check_every: float = CHECK_SECONDS,
    check_bytes: int = CHECK_BYTES,
    once: bool = False,
    on_pass: Callable[[MonitorPass], None] = lambda _: None,
    stop: threading.Event | None = None,
    take_in: Callable[[Store], InboxReport] | None = None,
) -> None:
    """Run passes until ``stop`` is set (or after one, with ``once``); each is reported to
    ``on_pass``. ``take_in``: what takes the inbox in (the ingestor's, composed by the
    caller)."""
    stop = stop or threading.Event()
    last_reconcile: float | None = None
    last_check: float | None = None
    while True:
        swept = sweep(store, settings)
        repaired = checked = None
        if last_reconcile is None or time.monotonic() - last_reconcile >= reconcile_every:
            repaired = reconcile(store)
            last_reconcile = time.monotonic()
        if last_check is None or time.monotonic() - last_check >= check_every:
            checked = check_damage(store, check_bytes)
            last_check = time.monotonic()
        events = drain_events(store, lambda: bucket_webhooks(store))
        inbox = take_in(store) if take_in is not None else None
        on_pass(MonitorPass(swept, repaired, checked, events, inbox))
        if once or stop.wait(every):
            return
