"""Running finished or failed documents again (``retry``, ``reprocess``) when a cleanup-mode
worker has deleted their sources: the source is fetched again from its registered folder or
repository first, or the document is reported with the reason it cannot run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bucketdigest.ingestor.restore import restore_source
from bucketdigest.monitor.catalog import document_hash
from bucketdigest.monitor.damage import damaged_sources
from bucketdigest.monitor.repair import retry_failed
from bucketdigest.shared import queue
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.store import Store
from bucketdigest.worker.reprocess import ReprocessReport, reprocess


def _restored(
    store: Store, digests: Sequence[str], cache_dir: Path
) -> tuple[list[str], dict[str, str]]:
    """The digests whose sources are in the store (fetched again if a cleanup-mode worker
    deleted them or the damage check found them damaged), and why the others' cannot be."""
    ready, cannot = [], {}
    damaged = damaged_sources(store)
    for digest in digests:
        reason = restore_source(store, digest, cache_dir, damaged=digest in damaged)
        if reason is None:
            ready.append(digest)
        else:
            cannot[digest] = reason
    return ready, cannot


def _named(store: Store, value: str) -> str:
    """The document a hash or its start (8 hex digits or more, any case) names."""
    digest = document_hash(store, value)
    if digest is None:
        raise ValueError(f"{value}: no document's hash is or starts so (8 to 64 hex digits)")
    return digest


def retry_documents(
    store: Store, digests: Sequence[str] | None, cache_dir: Path
) -> tuple[list[str], dict[str, str]]:
    """Dead letters back in line (every one with ``digests`` None): the requeued, and the
    ones that cannot be with the reason."""
    if digests is None:
        digests = [digest for digest, _ in queue.markers(store, QueueState.FAILED)]
    ready, cannot = _restored(store, [_named(store, d) for d in digests], cache_dir)
    return retry_failed(store, ready), cannot


def reprocess_documents(
    store: Store,
    digests: Sequence[str],
    digester: str | None,
    outdated: bool,
    cache_dir: Path,
) -> ReprocessReport:
    """``reprocess``, sources fetched again first where a cleanup-mode worker deleted them."""
    ready, cannot = _restored(store, [_named(store, d) for d in digests], cache_dir)
    report = reprocess(store, ready, digester, outdated)
    report.skipped.update(cannot)
    return report
