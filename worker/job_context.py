"""What a job needs from the worker that runs it, and the fence every write after the claim
goes through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bucketdigest.shared.attempts import RetryPolicy
from bucketdigest.shared.store import Store
from bucketdigest.worker.digester import DigestSettings
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.sandbox import Sandbox


@dataclass(frozen=True)
class JobContext:
    """What a job needs from the worker that runs it."""

    store: Store
    sandbox: Sandbox
    digest: DigestSettings
    worker_id: str
    lease_seconds: float
    retry: RetryPolicy
    shutdown_reason: Callable[[], str | None]
    checkpoint_after: float
    """Write a checkpoint once the unsaved digesters' work took this many seconds."""
    delete_source: bool = False
    """Delete ``store/raw/<hash>`` once the result is written (``--delete-source-when-done``)."""
    on_digester: Callable[[str, float], None] = lambda name, seconds: None
    """Told each digester's name and seconds once it ends, however it ended (for metrics)."""


def fenced(lease: Lease, write: Callable[[], object]) -> bool:
    """Renew the claim, then write: a worker paused past its lease (a zombie) learns it here,
    before anything of its lands beside the new owner's. False if the lease is lost."""
    lease.heartbeat()
    if lease.lost.is_set():
        return False
    write()
    return True
