"""Picklable factories that wire the roles together inside spawned worker processes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.search.indexer import IndexDuty
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.store import Store

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
    changed), then its share of indexing, whose failure never stops the worker."""

    settings: MonitorSettings
    index: IndexDuty | None = None

    def __call__(self, store: Store) -> Callable[[], int]:
        def duty() -> int:
            changed = sweep(store, self.settings).changed
            if self.index is not None:
                try:
                    self.index(store)
                except Exception:
                    log.exception("indexing failed; the worker goes on")
            return changed

        return duty
