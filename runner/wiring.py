"""Picklable factories that wire the roles together inside spawned worker processes, and
:func:`work_bucket`, the workers ``bucketdigest work`` runs: each with its monitor duty and
its share of indexing."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from bucketdigest.ingestor.inbox import take_inbox
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.search.indexer import IndexDuty
from bucketdigest.shared.bucket_settings import BucketSettings, bucket_webhooks, read_settings
from bucketdigest.shared.config import MONITOR_SECONDS, StoreSettings, open_store
from bucketdigest.shared.events import drain_events
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.brokered import BrokeredStore
from bucketdigest.worker.loop import MonitorCall, WorkerSettings, WorkerSummary
from bucketdigest.worker.pool import run_workers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenStore:
    """Opens the configured store in whichever process calls it."""

    settings: StoreSettings

    def __call__(self) -> Store:
        return open_store(self.settings)


@dataclass(frozen=True)
class MonitorDuty:
    """Gives a worker its light monitor duty: one lease sweep (returning how many jobs it
    changed), events sent, the inbox taken in, then its share of indexing, whose failure
    never stops the worker. ``leaving``: the worker is about to exit idle, so the index is
    brought up to date now."""

    settings: MonitorSettings
    index: IndexDuty | None = None

    def __call__(self, store: Store) -> MonitorCall:
        def duty(
            leaving: bool = False,
            make_room: Callable[[], None] | None = None,
            stopping: threading.Event | None = None,
        ) -> int:
            changed = sweep(store, self.settings).changed
            drain_events(store, lambda: bucket_webhooks(store))
            try:
                take_inbox(store)
            except Exception:
                log.exception("taking the inbox in failed; the worker goes on")
            if self.index is not None and not (leaving and changed):
                try:
                    self.index(store, leaving=leaving, make_room=make_room, stopping=stopping)
                except Exception:
                    log.exception("indexing failed; the worker goes on")
            return changed

        return duty


@dataclass(frozen=True)
class OpenBroker:
    """Opens a store through a broker in whichever process calls it."""

    url: str
    token: str

    def __call__(self) -> Store:
        return BrokeredStore(self.url, self.token)


def work_via(
    broker_url: str,
    token: str,
    worker: WorkerSettings,
    workers: int = 1,
) -> list[WorkerSummary]:
    """Run ``workers`` workers without bucket credentials, through the broker at
    ``broker_url`` (``work --via``); they have no monitor duty (the credentialed fleet's
    monitor sweeps their expired claims)."""
    return run_workers(workers, OpenBroker(broker_url, token), replace(worker, monitor_every=None))


def settings_via(broker_url: str, token: str) -> BucketSettings:
    """The bucket's settings, read through the broker at ``broker_url``."""
    return read_settings(OpenBroker(broker_url, token)())[0]


def work_bucket(
    settings: StoreSettings, worker: WorkerSettings, workers: int = 1
) -> list[WorkerSummary]:
    """Run ``workers`` workers on the bucket until they stop (``bucketdigest work``): one in
    this process (its summary is returned) or several processes. Each sweeps expired leases
    and keeps the index current as part of its monitor duty."""
    duty = MonitorDuty(
        MonitorSettings(max_attempts=worker.max_attempts),
        IndexDuty(settings, every=worker.monitor_every or MONITOR_SECONDS),
    )
    return run_workers(workers, OpenStore(settings), worker, monitor_duty=duty)
