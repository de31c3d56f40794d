"""Putting jobs back: retrying dead letters on request, and a consistency sweep so that no
document hangs whatever crashed where.

The sweep lists ``store/raw``, ``store/out`` and the queue once (1,000 keys a request), so it is
meant to run now and then (``bucketdigest monitor`` runs it every ``--reconcile-every``
seconds), not on every worker's monitor duty.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.pending import digests_with_pending_work
from bucketdigest.shared.records import SourceRecord, Ticket
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

SCRATCH_MAX_AGE = timedelta(hours=1)


def retry_failed(store: Store, digests: list[str] | None = None) -> list[str]:
    """Put dead-lettered jobs (all of them when ``digests`` is None) back in line with their
    attempts reset; their history is kept. Returns the digests requeued."""
    if digests is None:
        digests = [digest for digest, _ in queue.markers(store, QueueState.FAILED)]
    return [digest for digest in digests if queue.retry(store, digest)]


@dataclass
class ReconcileReport:
    """What the consistency sweep repaired, by digest or key."""

    enqueued: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    scratch_removed: list[str] = field(default_factory=list)


def _names(store: Store, digest: str) -> tuple[str, ...]:
    for info in store.list(keys.registry_doc_prefix(digest), limit=1):
        try:
            return (SourceRecord.from_json(store.get(info.key).data).path,)
        except (NotFound, CorruptRecord):
            break
    return (digest,)


def reconcile(store: Store) -> ReconcileReport:
    """Raw documents with no result (or with a result and pending work, such as a reprocess
    request) and no marker are enqueued; todo and failed markers of finished documents are
    removed; self-test scratch objects left by a crash are removed.
    (Processing markers of finished documents are left to the lease sweep, which removes them
    once their lease has expired, so a worker finishing right now is not disturbed.)"""
    report = ReconcileReport()
    done = {keys.parse_out_key(i.key) for i in store.list(keys.OUT_PREFIX)}
    done -= digests_with_pending_work(store)
    queued: set[str] = set()
    for state in QueueState:
        for digest, info in queue.markers(store, state):
            queued.add(digest)
            if digest in done and state is not QueueState.PROCESSING:
                queue.remove(store, digest, (state,))
                report.cleaned.append(info.key)
    for info in store.list(keys.RAW_PREFIX):
        digest, ext = keys.parse_raw_key(info.key)
        if digest in done or digest in queued:
            continue
        ticket = Ticket(
            digest=digest,
            ext=ext,
            size=info.size,
            names=_names(store, digest),
            enqueued_at=store.now(),
        )
        if queue.enqueue(store, ticket):
            report.enqueued.append(digest)
            log.info("enqueued %s, which had no result and no marker", digest)
    cutoff = store.now() - SCRATCH_MAX_AGE
    for info in store.list(keys.SELFTEST_PREFIX):
        if info.last_modified < cutoff and store.delete(info.key, if_match=info.etag):
            report.scratch_removed.append(info.key)
    return report
