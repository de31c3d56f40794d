"""Putting jobs back: retrying dead letters on request, and a consistency sweep so that no
document hangs whatever crashed where.

Each sweep walks the next ``SWEEP_BATCH`` sources in hash order and lists ``store/out``,
``work/`` and the queue over the same hash range only (1,000 keys a request), so its cost is
bounded whatever the bucket's size; a cursor in the bucket (``monitor/sweep.json``) carries the
walk across sweeps and monitors. It is meant to run now and then (``bucketdigest monitor``
runs it every ``--reconcile-every`` seconds), not on every worker's monitor duty.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.records import SweepCursor
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.tickets import source_ticket

log = logging.getLogger(__name__)

SCRATCH_MAX_AGE = timedelta(hours=1)


def retry_failed(store: Store, digests: list[str] | None = None) -> list[str]:
    """Put dead-lettered jobs (all of them when ``digests`` is None) back in line with their
    attempts reset; their history is kept. Returns the digests requeued."""
    if digests is None:
        digests = [digest for digest, _ in queue.markers(store, QueueState.FAILED)]
    return [digest for digest in digests if queue.retry(store, digest)]


SWEEP_BATCH = 100_000
"""Sources looked at per consistency sweep: about 2 LIST requests per 1,000 (sources and
results), whatever the bucket's size; the next sweep goes on from there."""

_LAST_HASH = "f" * 64


def prioritize(store: Store, digests: list[str], priority: Priority) -> tuple[list[str], list[str]]:
    """Move waiting documents to ``priority``'s lane: (moved, not waiting)."""
    moved, absent = [], []
    for digest in digests:
        (moved if queue.reprioritize(store, digest, priority) else absent).append(digest)
    return moved, absent


@dataclass
class ReconcileReport:
    """What the consistency sweep repaired, by digest or key, and which part of the hash
    space it covered (``after`` exclusive, ``until`` inclusive)."""

    enqueued: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    scratch_removed: list[str] = field(default_factory=list)
    after: str = ""
    until: str = _LAST_HASH


def _up_to(found: Iterable[str], until: str) -> Iterator[str]:
    """The digests of a key-ordered listing, up to ``until`` (inclusive)."""
    return itertools.takewhile(lambda digest: digest <= until, found)


def _sweep_range(store: Store, batch: int) -> tuple[str, str, list[ObjectInfo]]:
    """Where this sweep starts (the cursor left by the previous one), the sources it covers,
    and the last digest it covers (the end of the hash space once the walk wraps)."""
    try:
        after = SweepCursor.from_json(store.get(keys.SWEEP_CURSOR_KEY).data).after
    except (NotFound, CorruptRecord):
        after = ""
    start = keys.past_digest(keys.RAW_PREFIX, after) if after else ""
    sources = list(store.list(keys.RAW_PREFIX, start, batch))
    if len(sources) < batch:
        return after, _LAST_HASH, sources
    return after, keys.parse_raw_key(sources[-1].key)[0], sources


def reconcile(store: Store, batch: int = SWEEP_BATCH) -> ReconcileReport:
    """Over the next ``batch`` sources (in hash order, from where the previous sweep
    stopped; ``bucketdigest monitor`` runs it every ``--reconcile-every`` seconds): sources
    with no result (or with a result and pending work, such as a reprocess request) and no
    marker are enqueued; todo and failed markers of finished documents are removed. And
    self-test scratch objects left by a crash are removed.
    (Processing markers of finished documents are left to the lease sweep, which removes them
    once their lease has expired, so a worker finishing right now is not disturbed.)"""
    after, until, sources = _sweep_range(store, batch)
    report = ReconcileReport(after=after, until=until)
    out_start = keys.past_digest(keys.OUT_PREFIX, after) if after else ""
    results = (keys.parse_out_key(i.key) for i in store.list(keys.OUT_PREFIX, out_start))
    done = set(_up_to(results, until))
    work_start = keys.past_digest(keys.WORK_PREFIX, after) if after else ""
    pending = (keys.parse_work_digest(i.key) for i in store.list(keys.WORK_PREFIX, work_start))
    done -= set(_up_to(pending, until))
    queued: set[str] = set()
    for state in QueueState:
        for digest, info in itertools.takewhile(
            lambda found: found[0] <= until, queue.markers(store, state, after)
        ):
            queued.add(digest)
            if digest in done and state is not QueueState.PROCESSING:
                queue.remove(store, digest, (state,))
                report.cleaned.append(info.key)
    for info in sources:
        digest, _ = keys.parse_raw_key(info.key)
        if digest in done or digest in queued:
            continue
        if queue.enqueue(store, source_ticket(store, info)):
            report.enqueued.append(digest)
            log.info("enqueued %s, which had no result and no marker", digest)
    next_after = "" if until == _LAST_HASH else until
    store.put(keys.SWEEP_CURSOR_KEY, SweepCursor(after=next_after, swept_at=store.now()).to_json())
    cutoff = store.now() - SCRATCH_MAX_AGE
    for info in store.list(keys.SELFTEST_PREFIX):
        if info.last_modified < cutoff and store.delete(info.key, if_match=info.etag):
            report.scratch_removed.append(info.key)
    return report
