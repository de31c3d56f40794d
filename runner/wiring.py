"""Picklable factories that wire the roles together inside spawned worker processes, and
:func:`work_bucket`, the workers ``bucketdigest work`` runs: each with its monitor duty and
its share of indexing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bucketdigest.ingestor.inbox import take_inbox
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.search.indexer import IndexDuty
from bucketdigest.shared.bucket_settings import (
    adopt_flags,
    bucket_webhooks,
    read_settings,
    refuse_flags,
)
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
        def duty(leaving: bool = False, make_room: Callable[[], None] | None = None) -> int:
            changed = sweep(store, self.settings).changed
            drain_events(store, lambda: bucket_webhooks(store))
            try:
                take_inbox(store)
            except Exception:
                log.exception("taking the inbox in failed; the worker goes on")
            if self.index is not None and not (leaving and changed):
                try:
                    self.index(store, leaving=leaving, make_room=make_room)
                except Exception:
                    log.exception("indexing failed; the worker goes on")
            return changed

        return duty


def refuse_shadowing(
    settings: StoreSettings, given: Mapping[str, Any], defaults: Mapping[str, Any]
) -> None:
    """ConfigError when a setting ``given`` to this process (by a flag) differs from the
    bucket's (the value it sets, else ``defaults``): every process of the fleet follows it."""
    bucket = read_settings(open_store(settings, self_test=False))[0]
    refuse_flags(bucket, dict(given), dict(defaults))


def adopt_settings(settings: StoreSettings, given: Mapping[str, Any]) -> None:
    """``run``: the settings its flags give become the bucket's where it leaves them unset
    (ConfigError where it sets another value)."""
    adopt_flags(open_store(settings, self_test=False), dict(given))


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
    given: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> list[WorkerSummary]:
    """Run ``workers`` workers without bucket credentials, through the broker at
    ``broker_url`` (``work --via``); they have no monitor duty (the credentialed fleet's
    monitor sweeps their expired claims). ``given`` flags that differ from the bucket's
    settings are refused, as for any worker."""
    opened = OpenBroker(broker_url, token)
    refuse_flags(read_settings(opened())[0], dict(given or {}), dict(defaults or {}))
    return run_workers(workers, opened, replace(worker, monitor_every=None))


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
