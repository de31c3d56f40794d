"""Removing documents: those only removed paths still reference (``purge``), older
revisions of paths that hold newer content now (``purge --superseded``), or one named on
purpose (``rm``).

A document is only purged while held: the purge first makes the claim's conditional create
of ``queue/processing/<h>``, so no worker runs it and no ingest queues it meanwhile (both see
it processing); it then reads the manifests of every source that registered it again, and
keeps it if any path holds it now. What remains is the window of an ingest that looked at
the document before the hold (it saw it done and only writes its registry record): that
path's document is gone until the next ingest of the source, which uploads and queues it
again (docs/protocol.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import bucket_webhooks
from bucketdigest.shared.events import EventType, Outbox, Webhooks, document_event, record_event
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.manifests import read_manifests
from bucketdigest.shared.records import (
    PurgeRun,
    PurgeSkip,
    RemovedPath,
    SourceManifest,
    SourceRecord,
    Ticket,
)
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.tickets import registered_names

log = logging.getLogger(__name__)

HOLD_SECONDS = 600.0
_NOT_HELD = (QueueState.TODO, QueueState.FAILED)
_TODO = (QueueState.TODO,)


@dataclass(frozen=True)
class PurgeRule:
    """What to purge: documents of paths removed more than ``older_than`` ago, and with
    ``superseded`` also older revisions replaced more than ``older_than`` ago."""

    older_than: timedelta = timedelta(0)
    superseded: bool = False

    def describe(self) -> str:
        what = "removed paths" + (" and superseded revisions" if self.superseded else "")
        return f"{what} older than {self.older_than}"


@dataclass
class PurgeReport:
    """What a purge removed (or, dry, would remove) and what it kept, by digest."""

    purged: list[str] = field(default_factory=list)
    kept: list[PurgeSkip] = field(default_factory=list)
    objects_deleted: int = 0


def _records(store: Store, digest: str) -> list[SourceRecord]:
    return [
        SourceRecord.from_json(store.get(info.key).data)
        for info in store.list(keys.registry_doc_prefix(digest))
    ]


def _still_held(store: Store, digest: str) -> str | None:
    """Why ``digest`` must stay (a path of a source holds it, or a source it came from has
    no manifest), read afresh; None when nothing holds it."""
    manifests = read_manifests(store)
    for record in _records(store, digest):
        entry = manifests.get(record.source)
        if entry is None:
            return f"ingested from {record.source}, which has no manifest yet: ingest it again"
        if any(p.path == record.path and p.digest == digest for p in entry[0].paths):
            return f"still at {record.source} {record.path}"
    return None


def candidates(store: Store, rule: PurgeRule, now: datetime) -> list[str]:
    """Digests that removed (and, by the rule, superseded) entries name, past the grace."""
    due: set[str] = set()
    for manifest, _ in read_manifests(store).values():
        entries: Iterable[RemovedPath] = manifest.removed
        if rule.superseded:
            entries = [*manifest.removed, *manifest.superseded]
        due |= {e.digest for e in entries if e.removed_at + rule.older_than <= now}
    return sorted(due)


def _delete_document(store: Store, digest: str) -> int:
    """Every object of ``digest`` but the hold: registry records, sources, result, work
    files, todo and failed markers. Returns how many."""
    doomed = [info.key for info in store.list(keys.registry_doc_prefix(digest))]
    doomed += [info.key for info in store.list(keys.raw_prefix(digest))]
    doomed += [info.key for info in store.list(keys.work_prefix(digest))]
    singles = (keys.out_key(digest), *queue.marker_keys(digest, _NOT_HELD))
    doomed += [key for key in singles if store.head(key) is not None]
    store.delete_many(doomed)
    return len(doomed)


def _queued(store: Store, digest: str) -> bool:
    return any(store.head(key) is not None for key in queue.marker_keys(digest, _TODO))


@dataclass(frozen=True)
class RemovalEvents:
    """Where a purge reports each document it removes (the bucket's event endpoints)."""

    webhooks: Webhooks
    outbox: Outbox

    @classmethod
    def of(cls, store: Store) -> RemovalEvents | None:
        hooks = bucket_webhooks(store)
        return cls(hooks, Outbox(store)) if hooks.endpoints else None


def purge_document(
    store: Store,
    digest: str,
    holder: str,
    *,
    check_sources: bool = True,
    events: RemovalEvents | None = None,
) -> tuple[int, str | None]:
    """Hold ``digest``, check (with ``check_sources``) that no path holds it, delete it,
    release; with ``events``, report the removal. Returns (objects deleted, why it was kept:
    None when purged)."""
    if _queued(store, digest):
        return 0, "queued"
    ticket = Ticket(digest=digest, ext="", size=0, names=(), enqueued_at=store.now())
    hold = queue.hold(store, ticket, holder, HOLD_SECONDS)
    if hold is None:
        return 0, "being processed"
    try:
        if _queued(store, digest):
            return 0, "queued"
        if check_sources and (reason := _still_held(store, digest)) is not None:
            return 0, reason
        event = None
        if events is not None:  # recorded first, under the hold: a crash cannot lose it
            names = registered_names(store, digest)
            event = document_event(EventType.REMOVED, digest, names, store.now(), holder)
            record_event(store, event, events.webhooks)
        deleted = _delete_document(store, digest)
        if events is not None and event is not None:
            events.outbox.send_recorded(event, events.webhooks)
        return deleted, None
    finally:
        queue.release(store, digest, hold.etag)


def forget(store: Store, purged: set[str]) -> None:
    """Drop the removed and superseded entries of purged documents from the manifests
    (If-Match: a manifest an ingest rewrote meanwhile is left for the next purge)."""
    for manifest, etag in read_manifests(store).values():
        removed = tuple(r for r in manifest.removed if r.digest not in purged)
        superseded = tuple(r for r in manifest.superseded if r.digest not in purged)
        if (removed, superseded) != (manifest.removed, manifest.superseded):
            kept = SourceManifest(
                manifest.source,
                manifest.run_id,
                manifest.updated_at,
                manifest.paths,
                removed,
                superseded,
            )
            store.put_if_match(keys.source_manifest_key(manifest.source), kept.to_json(), etag)


def _dry_reason(store: Store, digest: str) -> str | None:
    if _queued(store, digest):
        return "queued"
    if store.head(keys.queue_key(QueueState.PROCESSING, digest)) is not None:
        return "being processed"
    return _still_held(store, digest)


def purge(store: Store, rule: PurgeRule, *, dry_run: bool = False) -> PurgeRun:
    """Purge what ``rule`` names (``dry_run``: only say what would go); a real purge is
    recorded at ``registry/runs/<run-id>.purge.json``."""
    counting = CountingStore(store)
    started = store.now()
    run_id = keys.new_run_id(started)
    report = PurgeReport()
    events = None if dry_run else RemovalEvents.of(counting)
    for digest in candidates(counting, rule, started):
        if dry_run:
            deleted, reason = 0, _dry_reason(counting, digest)
        else:
            deleted, reason = purge_document(counting, digest, f"purge-{run_id}", events=events)
        if reason is None:
            report.purged.append(digest)
            report.objects_deleted += deleted
        else:
            report.kept.append(PurgeSkip(digest, reason))
    if not dry_run:
        forget(counting, set(report.purged))
    if events is not None:
        events.outbox.close()
    return _recorded(counting, run_id, started, rule.describe(), report, dry_run)


def remove_document(store: Store, digest: str) -> PurgeRun:
    """``rm``: purge one document whatever holds it (unless it is queued or processing);
    a source that still holds the file brings it back at its next ingest."""
    counting = CountingStore(store)
    started = store.now()
    run_id = keys.new_run_id(started)
    report = PurgeReport()
    events = RemovalEvents.of(counting)
    deleted, reason = purge_document(
        counting, digest, f"rm-{run_id}", check_sources=False, events=events
    )
    if events is not None:
        events.outbox.close()
    if reason is None:
        report.purged.append(digest)
        report.objects_deleted = deleted
        forget(counting, {digest})
    else:
        report.kept.append(PurgeSkip(digest, reason))
    return _recorded(counting, run_id, started, f"rm {digest}", report, dry_run=False)


def _recorded(
    store: CountingStore,
    run_id: str,
    started: datetime,
    rule: str,
    report: PurgeReport,
    dry_run: bool,
) -> PurgeRun:
    run = PurgeRun(
        run_id=run_id,
        started_at=started,
        finished_at=store.now(),
        rule=rule,
        dry_run=dry_run,
        purged=tuple(report.purged),
        kept=tuple(report.kept),
        objects_deleted=report.objects_deleted,
        store_requests=store.total + (0 if dry_run else 1),
    )
    if not dry_run:
        store.put(keys.run_key(run_id, keys.RunKind.PURGE), run.to_json())
    return run
