"""Picklable factories that wire the roles together inside spawned worker processes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class OpenStore:
    """Opens the configured store in whichever process calls it."""

    settings: StoreSettings

    def __call__(self) -> Store:
        return open_store(self.settings)


@dataclass(frozen=True)
class MonitorDuty:
    """Gives a worker its light monitor duty: one sweep, returning how many jobs it changed."""

    settings: MonitorSettings

    def __call__(self, store: Store) -> Callable[[], int]:
        return lambda: sweep(store, self.settings).changed
