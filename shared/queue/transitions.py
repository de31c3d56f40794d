"""Every transition of the queue: one function per arrow of the state diagram
(:mod:`bucketdigest.shared.queue`)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import timedelta

from bucketdigest.shared import keys
from bucketdigest.shared.attempts import RetryPolicy, with_attempt
from bucketdigest.shared.bucket_settings import attempt_budget
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.events import Event, EventType, document_event
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.queue.states import marker_keys, todo_marker
from bucketdigest.shared.records import AttemptOutcome, Claim, Failure, OutputRecord, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.tickets import rebuild_ticket

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """A job a worker holds: the processing marker as written, and the ETag that proves it."""

    claim: Claim
    etag: str

    @property
    def digest(self) -> str:
        return self.claim.ticket.digest


@dataclass(frozen=True)
class ClaimResult:
    """What a claim attempt found: a job, or none and whether the job is only waiting."""

    job: Job | None
    deferred: bool = False


def enqueue(store: Store, ticket: Ticket) -> bool:
    """→ todo, in the lane of the ticket's priority. False when that lane has it already."""
    key = keys.queue_key(QueueState.TODO, ticket.digest, ticket.priority)
    return store.put_if_absent(key, ticket.to_json()) is not None


def reprioritize(store: Store, digest: str, priority: Priority) -> bool:
    """todo (one lane) → todo (another): the ticket is written to the new lane, then the old
    marker deleted if it is still the version read. False when ``digest`` is not waiting."""
    found = todo_marker(store, digest)
    if found is None:
        return False
    lane, marker = found
    if lane is not priority:
        moved = replace(Ticket.from_json(marker.data), priority=priority)
        store.put_if_absent(keys.queue_key(QueueState.TODO, digest, priority), moved.to_json())
        store.delete(keys.queue_key(QueueState.TODO, digest, lane), if_match=marker.etag)
    return True


def claim(
    store: Store,
    digest: str,
    worker_id: str,
    lease_seconds: float,
    priority: Priority = Priority.NORMAL,
) -> ClaimResult:
    """todo (in ``priority``'s lane) → processing: the conditional create of the processing
    marker decides who owns the job; a lost race or a job not yet due gives no job. A damaged
    todo marker is rebuilt from the stored source (and removed if there is none)."""
    todo = keys.queue_key(QueueState.TODO, digest, priority)
    try:
        ticket = Ticket.from_json(store.get(todo).data)
    except NotFound:
        return ClaimResult(None)
    except CorruptRecord as exc:
        log.error("%s: %s; rebuilding the ticket from the stored source", todo, exc)
        rebuilt = rebuild_ticket(store, digest)
        if rebuilt is None:
            log.error("%s: no source in the store either; removing the marker", todo)
            store.delete(todo)
            return ClaimResult(None)
        ticket = rebuilt
    if ticket.not_before is not None and ticket.not_before > store.now():
        return ClaimResult(None, deferred=True)
    job = _processing(store, ticket, worker_id, lease_seconds, hold=False)
    if job is None:
        log.debug("lost the claim race for %s", digest)
        return ClaimResult(None)
    store.delete(todo)
    return ClaimResult(job)


def hold(store: Store, ticket: Ticket, holder: str, seconds: float) -> Job | None:
    """The processing marker of an operation on the whole document (a purge), made without a
    todo marker, so no worker takes the document meanwhile and no ingest queues it (it sees
    it processing). A hold whose lease expires is dropped by the sweep (``release``), not
    requeued. None when the document is processing already."""
    return _processing(store, ticket, holder, seconds, hold=True)


def _processing(
    store: Store, ticket: Ticket, holder: str, seconds: float, *, hold: bool
) -> Job | None:
    """The conditional create of ``queue/processing/<h>`` (a claim, or a hold)."""
    now = store.now()
    held = Claim(
        ticket=ticket,
        worker_id=holder,
        token=secrets.token_hex(16),
        claimed_at=now,
        heartbeat_at=now,
        lease_until=now + timedelta(seconds=seconds),
        hold=hold,
    )
    etag = store.put_if_absent(keys.queue_key(QueueState.PROCESSING, ticket.digest), held.to_json())
    return None if etag is None else Job(claim=held, etag=etag)


def release(store: Store, digest: str, etag: str) -> bool:
    """processing → (whatever the holder left): drop a hold if it is still version ``etag``."""
    return _drop_claim(store, digest, etag)


def renew(store: Store, claim_now: Claim, etag: str) -> str | None:
    """processing ⟲: rewrite the claim if it is still version ``etag``; the new ETag, or None
    when someone else has acted on the job (the lease is lost)."""
    key = keys.queue_key(QueueState.PROCESSING, claim_now.ticket.digest)
    return store.put_if_match(key, claim_now.to_json(), etag)


def _drop_claim(store: Store, digest: str, etag: str) -> bool:
    return store.delete(keys.queue_key(QueueState.PROCESSING, digest), if_match=etag)


Announce = Callable[[Event], None]
"""Records an event in the bucket (and may send it at once): a process's outbox, or the
monitor's record for its drain. A transition calls it once its new state is written and before
it drops the claim, so a crash in between leaves the claim for the sweep, which ends it again
with the same event (the same id: recorded once)."""


def done_event(
    store: Store, digest: str, names: tuple[str, ...], outputs: Iterable[OutputRecord] = ()
) -> Event | None:
    """The event of ``digest``'s result as it stands (its ETag tells one result from the
    next); None when there is none."""
    found = store.head(keys.out_key(digest))
    if found is None:
        return None
    return document_event(EventType.DONE, digest, names, store.now(), found.etag, outputs=outputs)


def finish(
    store: Store,
    digest: str,
    etag: str,
    announce: Announce | None = None,
    names: tuple[str, ...] = (),
    outputs: Iterable[OutputRecord] = (),
) -> bool:
    """processing → done: the result is written; its event recorded, then the claim dropped
    if it is still ours."""
    if announce is not None and (event := done_event(store, digest, names, outputs)) is not None:
        announce(event)
    return _drop_claim(store, digest, etag)


def hand_back(store: Store, ticket: Ticket, etag: str) -> bool:
    """processing → todo with the same attempt (shutdown: the job is put back untouched): a
    requeue of the ticket as it was."""
    return requeue(store, ticket, etag)


def requeue(store: Store, ticket: Ticket, etag: str) -> bool:
    """processing → todo with ``ticket`` (the next attempt, its backoff and history), then
    the claim dropped if it is still version ``etag``. The todo is written first, so a crash in
    between leaves a duplicate, which the next claimant resolves. A job that ran may have left
    progress, so the ticket is no longer untouched."""
    enqueue(store, replace(ticket, untouched=False))
    return _drop_claim(store, ticket.digest, etag)


def failed_event(failure: Failure) -> Event:
    """The event of a dead letter (its attempt tells one failure from a later one)."""
    ticket = failure.ticket
    return document_event(
        EventType.FAILED, ticket.digest, ticket.names, failure.failed_at,
        f"attempt-{ticket.attempt}", outputs=failure.outputs, error=failure.error,
    )  # fmt: skip


def dead_letter(
    store: Store, failure: Failure, etag: str, announce: Announce | None = None
) -> bool:
    """processing → failed: the failure (error, traceback, history, records) is written, its
    event recorded, then the claim dropped if it is still version ``etag``."""
    digest = failure.ticket.digest
    store.put(keys.queue_key(QueueState.FAILED, digest), failure.to_json())
    if announce is not None:
        announce(failed_event(failure))
    return _drop_claim(store, digest, etag)


@dataclass(frozen=True)
class AttemptEnd:
    """How an attempt that did not finish the document ended: a worker's error or an expired
    lease the monitor found."""

    outcome: AttemptOutcome
    """What the ticket's history says of it."""
    error: str
    traceback: str = ""
    permanent: bool = False
    """The input itself is unusable: no attempt can help."""
    final: bool = False
    """An output the document needs failed for good (its own attempts are spent)."""
    retryable: bool = True
    """Whether ``bucketdigest retry`` could help once the document is dead-lettered."""
    outputs: tuple[OutputRecord, ...] = ()
    backoff: bool = True
    """Wait before the next attempt (a worker's error) or not (a lost worker)."""

    def is_last(self, ticket: Ticket, policy: RetryPolicy) -> bool:
        """Whether the document goes to ``failed`` rather than back to ``todo``."""
        return self.final or policy.gives_up(ticket, self.permanent)


def end_attempt(
    store: Store,
    claim: Claim,
    etag: str,
    end: AttemptEnd,
    policy: RetryPolicy,
    announce: Announce | None = None,
) -> QueueState | None:
    """processing → todo (``requeue``, the next attempt) or → failed (``dead_letter``, with the
    whole history): the one place an unfinished attempt ends, for workers and the monitor alike.
    Returns the state the document moved to, None if the claim was no longer version ``etag``."""
    now = store.now()
    ticket = with_attempt(claim.ticket, claim, now, end.outcome, end.error)
    if end.is_last(ticket, policy):
        failure = Failure(
            ticket=ticket,
            worker_id=claim.worker_id,
            failed_at=now,
            error=end.error,
            traceback=end.traceback,
            retryable=end.retryable,
            outputs=end.outputs,
        )
        return QueueState.FAILED if dead_letter(store, failure, etag, announce) else None
    again = policy.next_attempt(ticket, now, backoff=end.backoff)
    return QueueState.TODO if requeue(store, again, etag) else None


def retry(store: Store, digest: str) -> bool:
    """failed → todo with attempts reset (history kept); False if ``digest`` is not failed.
    A dead letter that cannot be read goes back with a ticket rebuilt from the stored source
    (False, the marker kept, when there is none)."""
    key = keys.queue_key(QueueState.FAILED, keys.check_hash(digest))
    try:
        marker = store.get(key)
    except NotFound:
        log.warning("%s is not in queue/failed/", digest)
        return False
    try:
        ticket: Ticket | None = Failure.from_json(marker.data).ticket
    except CorruptRecord as exc:
        log.error("%s: %s; rebuilding the ticket from the stored source", key, exc)
        ticket = rebuild_ticket(store, digest)
        if ticket is None:
            return False
    budget = attempt_budget(store)
    enqueue(
        store, replace(ticket, attempt=1, not_before=None, max_attempts=budget, untouched=False)
    )
    return store.delete(key, if_match=marker.etag)


def mend(store: Store, state: QueueState, digest: str, key: str, etag: str) -> bool:
    """A marker that does not parse, judged at version ``etag``, made whole again from the
    stored source: a todo marker is rewritten in place, a dead letter goes back in line (see
    :func:`retry`). A processing marker is left to the lease sweep, which replaces it once
    its lease is over. False when nothing was done (no source, or the marker changed)."""
    if state is QueueState.FAILED:
        return retry(store, digest)
    if state is not QueueState.TODO:
        return False
    ticket = rebuild_ticket(store, digest)
    if ticket is None:
        return False
    return store.put_if_match(key, ticket.to_json(), etag) is not None


def remove(store: Store, digest: str, states: tuple[QueueState, ...] = tuple(QueueState)) -> None:
    """Delete ``digest``'s markers in ``states``: markers left beside a finished result."""
    for key in marker_keys(digest, states):
        store.delete(key)


def remove_damaged(store: Store, state: QueueState, digest: str, etag: str) -> bool:
    """Delete one marker that cannot be read, if it is still the version judged damaged."""
    return store.delete(keys.queue_key(state, digest), if_match=etag)
