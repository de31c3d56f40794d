"""Running finished or failed documents again (``retry``, ``reprocess``) when a cleanup-mode
worker has deleted their sources or the damage check found them damaged: the source is fetched
again from its registered folder or repository first, or the document is reported with the
reason it cannot run. And ``bucketdigest check``: the damage check over the whole bucket, then
every damaged source fetched again and its document run again where it needs to be."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bucketdigest.ingestor.restore import restore_source
from bucketdigest.monitor.catalog import document_hash
from bucketdigest.monitor.damage import DamageReport, check_bucket, damaged_sources, forget
from bucketdigest.monitor.repair import retry_failed
from bucketdigest.shared import keys, queue
from bucketdigest.shared.chain import DIGESTERS
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
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
            if digest in damaged:
                forget(store, {info.key for info in store.list(keys.raw_prefix(digest))})
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
    settings: DocumentSettings | None = None,
) -> ReprocessReport:
    """``reprocess``, sources fetched again first where a cleanup-mode worker deleted them;
    with ``settings``, the whole chain with those of the documents' own."""
    ready, cannot = _restored(store, [_named(store, d) for d in digests], cache_dir)
    report = reprocess(store, ready, digester, outdated, settings)
    report.skipped.update(cannot)
    return report


@dataclass
class RepairReport:
    """``bucketdigest check``: what the damage check found and did, the documents whose
    damaged source was fetched again, and those whose source could not be, with why."""

    damage: DamageReport
    restored: list[str] = field(default_factory=list)
    unrestorable: dict[str, str] = field(default_factory=dict)


def repair_bucket(store: Store, cache_dir: Path) -> RepairReport:
    """Check every object of the bucket (:func:`~bucketdigest.monitor.damage.check_bucket`),
    then fetch every damaged source again from where it was ingested, and run its document
    again if it failed or its result is damaged too."""
    report = RepairReport(check_bucket(store))
    for digest in sorted(damaged_sources(store)):
        state = queue.state_of(store, digest)
        if state is DocState.FAILED:
            _, cannot = retry_documents(store, [digest], cache_dir)
        elif state is DocState.DONE and keys.out_key(digest) in report.damage.found:
            cannot = reprocess_documents(store, [digest], DIGESTERS[0], False, cache_dir).skipped
        else:
            _, cannot = _restored(store, [digest], cache_dir)
        if digest in cannot:
            report.unrestorable[digest] = cannot[digest]
        else:
            report.restored.append(digest)
    return report
