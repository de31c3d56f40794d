"""The queue: a document's states and every transition between them (docs/protocol.md).

This is the only module that writes or removes markers under ``queue/``. Each function is one
arrow of the state diagram; each writes the new state before removing the old one, so a crash
between the two requests leaves a duplicate (resolved later), never a gap. Transitions out of
``processing`` are fenced: they remove the claim only if it is still the version (ETag) the
caller holds.

```
ingest ─enqueue─► todo ─claim─► processing ─finish─► (done: store/out/<h>.zip)
                   ▲              │  renew ⟲
                   ├──hand_back───┤
                   ├──requeue─────┤   (retryable error with attempts left, or lease expired)
                   │              └─dead_letter─► failed
                   └──────────────retry──────────────┘
remove: markers left beside a finished result
```
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Attempt, Claim, Failure, Ticket
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.tickets import rebuild_ticket

log = logging.getLogger(__name__)


class DocState(StrEnum):
    """Where a document stands: a queue folder holds its marker, or its result exists."""

    TODO = "todo"
    PROCESSING = "processing"
    FAILED = "failed"
    DONE = "done"


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


@dataclass(frozen=True)
class RetryPolicy:
    """How often a document is tried and how long it waits between attempts."""

    max_attempts: int = 3
    retry_delay: float = 30.0
    """Backoff before attempt n+1 is ``retry_delay * 2**(n-1)`` seconds."""

    def gives_up(self, attempt: int, permanent: bool = False) -> bool:
        """Whether a failure on ``attempt`` is final."""
        return permanent or attempt >= self.max_attempts

    def next_attempt(self, ticket: Ticket, now: datetime, backoff: bool = True) -> Ticket:
        """The ticket of the following attempt, due after the backoff (or at once)."""
        delay = timedelta(seconds=self.retry_delay * 2 ** (ticket.attempt - 1))
        return replace(
            ticket, attempt=ticket.attempt + 1, not_before=now + delay if backoff else None
        )


def with_attempt(
    ticket: Ticket, claim: Claim, ended_at: datetime, outcome: str, error: str = ""
) -> Ticket:
    """``ticket`` with the attempt that ``claim`` made appended to its history."""
    attempt = Attempt(
        attempt=ticket.attempt,
        worker_id=claim.worker_id,
        claimed_at=claim.claimed_at,
        ended_at=ended_at,
        outcome=outcome,
        error=error,
    )
    return replace(ticket, history=(*ticket.history, attempt))


def markers(
    store: Store, state: QueueState, start_after: str = "", limit: int | None = None
) -> Iterator[tuple[str, ObjectInfo]]:
    """``(digest, marker info)`` of the markers in one queue folder, in key order, from the
    digest ``start_after`` on. Objects that are not markers are skipped with a warning."""
    after = keys.queue_key(state, start_after) if start_after else ""
    for info in store.list(state.prefix, after, limit):
        try:
            _, digest = keys.parse_queue_key(info.key)
        except ValueError:
            log.warning("ignoring a foreign object in the queue: %s", info.key)
            continue
        yield digest, info


def document_states(store: Store) -> dict[str, DocState]:
    """digest → state, for every document with a marker or a result (one listing each)."""
    states: dict[str, DocState] = {}
    for state in QueueState:
        for digest, _ in markers(store, state):
            states[digest] = DocState(state.value)
    for info in store.list(keys.OUT_PREFIX):
        states[keys.parse_out_key(info.key)] = DocState.DONE
    return states


def state_of(store: Store, digest: str) -> DocState | None:
    """One document's state (a HEAD per place asked), or None if the bucket has no trace."""
    if store.head(keys.out_key(digest)) is not None:
        return DocState.DONE
    for state in QueueState:
        if store.head(keys.queue_key(state, digest)) is not None:
            return DocState(state.value)
    return None


def read_failure(store: Store, digest: str) -> Failure | None:
    """The dead letter of ``digest``, or None."""
    try:
        return Failure.from_json(store.get(keys.queue_key(QueueState.FAILED, digest)).data)
    except NotFound:
        return None


def enqueue(store: Store, ticket: Ticket) -> bool:
    """→ todo. False when a todo marker exists already (the document is in line)."""
    return (
        store.put_if_absent(keys.queue_key(QueueState.TODO, ticket.digest), ticket.to_json())
        is not None
    )


def claim(store: Store, digest: str, worker_id: str, lease_seconds: float) -> ClaimResult:
    """todo → processing: the conditional create of the processing marker decides who owns
    the job; a lost race or a job not yet due gives no job. A damaged todo marker is rebuilt
    from the stored source (and removed if there is none)."""
    todo = keys.queue_key(QueueState.TODO, digest)
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
    now = store.now()
    if ticket.not_before is not None and ticket.not_before > now:
        return ClaimResult(None, deferred=True)
    held = Claim(
        ticket=ticket,
        worker_id=worker_id,
        token=secrets.token_hex(16),
        claimed_at=now,
        heartbeat_at=now,
        lease_until=now + timedelta(seconds=lease_seconds),
    )
    etag = store.put_if_absent(keys.queue_key(QueueState.PROCESSING, digest), held.to_json())
    if etag is None:
        log.debug("lost the claim race for %s", digest)
        return ClaimResult(None)
    store.delete(todo)
    return ClaimResult(Job(claim=held, etag=etag))


def hold(store: Store, ticket: Ticket, holder: str, seconds: float) -> Job | None:
    """→ processing without a todo marker, for an operation on the whole document (a purge):
    the claim's conditional create, so no worker takes the document meanwhile and no ingest
    queues it (it sees it processing). None when it is processing already."""
    now = store.now()
    held = Claim(
        ticket=ticket,
        worker_id=holder,
        token=secrets.token_hex(16),
        claimed_at=now,
        heartbeat_at=now,
        lease_until=now + timedelta(seconds=seconds),
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


def finish(store: Store, digest: str, etag: str) -> bool:
    """processing → done: the result is written; drop the claim if it is still ours."""
    return _drop_claim(store, digest, etag)


def hand_back(store: Store, ticket: Ticket, etag: str) -> bool:
    """processing → todo with the same attempt (shutdown: the job is put back untouched)."""
    enqueue(store, ticket)
    return _drop_claim(store, ticket.digest, etag)


def requeue(store: Store, ticket: Ticket, etag: str) -> bool:
    """processing → todo with ``ticket`` (the next attempt, its backoff and history), then
    the claim dropped if it is still version ``etag``. The todo is written first, so a crash in
    between leaves a duplicate, which the next claimant resolves."""
    enqueue(store, ticket)
    return _drop_claim(store, ticket.digest, etag)


def dead_letter(store: Store, failure: Failure, etag: str) -> bool:
    """processing → failed: the failure (error, traceback, history, records) is written, then
    the claim dropped if it is still version ``etag``."""
    digest = failure.ticket.digest
    store.put(keys.queue_key(QueueState.FAILED, digest), failure.to_json())
    return _drop_claim(store, digest, etag)


def retry(store: Store, digest: str) -> bool:
    """failed → todo with attempts reset (history kept); False if ``digest`` is not failed."""
    key = keys.queue_key(QueueState.FAILED, keys.check_hash(digest))
    try:
        marker = store.get(key)
    except NotFound:
        log.warning("%s is not in queue/failed/", digest)
        return False
    ticket = replace(Failure.from_json(marker.data).ticket, attempt=1, not_before=None)
    enqueue(store, ticket)
    return store.delete(key, if_match=marker.etag)


def remove(store: Store, digest: str, states: tuple[QueueState, ...] = tuple(QueueState)) -> None:
    """Delete ``digest``'s markers in ``states``: markers left beside a finished result."""
    for state in states:
        store.delete(keys.queue_key(state, digest))


def remove_damaged(store: Store, state: QueueState, digest: str, etag: str) -> bool:
    """Delete one marker that cannot be read, if it is still the version judged damaged."""
    return store.delete(keys.queue_key(state, digest), if_match=etag)
