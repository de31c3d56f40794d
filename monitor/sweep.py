"""One monitor pass over the queue: expired claims go back in line.

(Failures with attempts left never reach ``queue/failed/``: the worker that saw them puts them
back in ``queue/todo/`` with a backoff, so ``queue/failed/`` is the dead letter alone.)

Several monitors (and every worker's monitor duty) may run at once: each step is a
conditional write or delete against the version just read, so two monitors acting on the same
marker cannot both succeed, and the loser simply moves on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bucketdigest.shared import queue
from bucketdigest.shared.attempts import MAX_ATTEMPTS, RetryPolicy
from bucketdigest.shared.bucket_settings import read_settings, webhooks
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.events import Event, Webhooks, record_event
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.pending import is_finished
from bucketdigest.shared.records import AttemptOutcome, Claim
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.tickets import rebuild_ticket, registered_names

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorSettings:
    """Thresholds of a monitor pass."""

    stale_after: float = 7200.0
    """Upper bound on any lease, whatever ``lease_until`` says (guards against clock skew)."""
    max_attempts: int = MAX_ATTEMPTS
    webhooks: Webhooks = field(default_factory=Webhooks)
    """Where an event goes when a document is dead-lettered (the bucket's ``events``)."""


@dataclass
class SweepReport:
    """What one pass did, by hash."""

    requeued: list[str] = field(default_factory=list)
    dead_lettered: list[str] = field(default_factory=list)
    finalized: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    """Holds (a purge's) whose holder died: dropped, the document left as it was."""

    @property
    def changed(self) -> int:
        return (
            len(self.requeued) + len(self.dead_lettered) + len(self.finalized) + len(self.released)
        )


def lease_expired(claim: Claim, marker: ObjectInfo, now: datetime, bound: float) -> bool:
    """Judged on the store's clock: the marker's LastModified plus the lease length it granted
    itself (at most ``bound`` seconds), so the workers' own clocks never matter."""
    granted = min(claim.lease_until - claim.heartbeat_at, timedelta(seconds=bound))
    return now > marker.last_modified + granted


def _finalize_if_done(
    store: Store, digest: str, names: Callable[[], tuple[str, ...]], announce: queue.Announce | None
) -> bool:
    """A zip in ``store/out`` with no pending work means done, whoever made it: its event
    (the worker died before it could record it, or did: the same id, recorded once), then
    leftover markers dropped."""
    if not is_finished(store, digest):
        return False
    if announce is not None and (done := queue.done_event(store, digest, names())):
        announce(done)
    queue.remove(store, digest)
    return True


def _recorder(store: Store, hooks: Webhooks) -> queue.Announce | None:
    """The sweep's events are recorded for the drain that follows it (no thread of its own)."""
    if not hooks.endpoints:
        return None

    def record(event: Event) -> None:
        record_event(store, event, hooks)

    return record


def _requeue_claim(
    store: Store, digest: str, info: ObjectInfo, settings: MonitorSettings, report: SweepReport
) -> None:
    try:
        marker = store.get(info.key)
    except NotFound:
        return
    try:
        claim = Claim.from_json(marker.data)
    except CorruptRecord as exc:
        _replace_damaged_claim(store, digest, info, marker.etag, settings, report, exc)
        return

    # an expired claim: a hold is dropped, a finished job's claim removed, else the attempt ends
    now = store.now()
    if not lease_expired(claim, info, now, settings.stale_after):
        return
    if claim.hold:
        if queue.release(store, digest, marker.etag):
            report.released.append(digest)
            log.info("hold on %s by %s expired: released", digest, claim.worker_id)
        return
    announce = _recorder(store, settings.webhooks)
    if _finalize_if_done(store, digest, lambda: claim.ticket.names, announce):
        report.finalized.append(digest)
        return

    policy = RetryPolicy(max_attempts=settings.max_attempts)
    end = queue.AttemptEnd(
        outcome=AttemptOutcome.LEASE_EXPIRED,
        error=f"lease expired on attempt {claim.ticket.attempt} of {policy.budget(claim.ticket)}"
        f": no heartbeat since {claim.heartbeat_at.isoformat()}",
        retryable=False,
        backoff=False,
    )
    moved = queue.end_attempt(store, claim, marker.etag, end, policy, announce)
    target = report.dead_lettered if moved is QueueState.FAILED else report.requeued
    if moved:
        target.append(digest)
        log.info(
            "claim on %s by %s expired: %s",
            digest,
            claim.worker_id,
            "requeued" if target is report.requeued else "out of attempts",
        )


def _replace_damaged_claim(
    store: Store,
    digest: str,
    info: ObjectInfo,
    etag: str,
    settings: MonitorSettings,
    report: SweepReport,
    exc: CorruptRecord,
) -> None:
    """A processing marker that cannot be read cannot be renewed either: after ``stale_after``
    it is replaced by a todo ticket rebuilt from the source."""
    if store.now() <= info.last_modified + timedelta(seconds=settings.stale_after):
        return
    log.error("%s: %s; requeueing from the stored source", info.key, exc)

    def names() -> tuple[str, ...]:
        return registered_names(store, digest)

    if _finalize_if_done(store, digest, names, _recorder(store, settings.webhooks)):
        report.finalized.append(digest)
        return
    ticket = rebuild_ticket(store, digest)
    if ticket is None:
        queue.remove_damaged(store, QueueState.PROCESSING, digest, etag)
    elif queue.requeue(store, ticket, etag):
        report.requeued.append(digest)


def sweep(store: Store, settings: MonitorSettings) -> SweepReport:
    """One pass: expired claims back to todo, or to failed when out of attempts (the bucket's
    ``max_attempts`` when it sets one, so every monitor and worker agrees)."""
    report = SweepReport()
    markers = list(queue.markers(store, QueueState.PROCESSING))
    if markers:  # the settings are read only when there is a claim to judge
        bucket = read_settings(store)[0]
        settings = replace(
            settings,
            max_attempts=bucket.max_attempts or settings.max_attempts,
            webhooks=webhooks(store, bucket),
        )
    for digest, info in markers:
        _requeue_claim(store, digest, info, settings, report)
    return report
