"""Claiming a job: the conditional create of ``queue/processing/<hash>`` decides who owns it.

Candidates are listed from a random point of the hash space (``StartAfter``), wrapping around
to the start, so a claim costs one small LIST whatever the queue length and concurrent workers
rarely contend for the same keys.
"""

from __future__ import annotations

import logging
import random
import secrets
from collections import deque
from dataclasses import dataclass
from datetime import timedelta

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.tickets import rebuild_ticket

log = logging.getLogger(__name__)

CANDIDATES_PER_LIST = 16


@dataclass(frozen=True)
class Job:
    """A job this worker holds: the marker as written, and the ETag that proves ownership."""

    claim: Claim
    etag: str

    @property
    def digest(self) -> str:
        return self.claim.ticket.digest


@dataclass(frozen=True)
class ClaimResult:
    """What a claim round found: a job, or none and whether some jobs are only waiting."""

    job: Job | None
    deferred: bool = False


def new_claim(ticket: Ticket, worker_id: str, store: Store, lease_seconds: float) -> Claim:
    """A fresh processing marker for ``ticket`` held by ``worker_id`` under a new token."""
    now = store.now()
    return Claim(
        ticket=ticket,
        worker_id=worker_id,
        token=secrets.token_hex(16),
        claimed_at=now,
        heartbeat_at=now,
        lease_until=now + timedelta(seconds=lease_seconds),
    )


def try_claim(store: Store, digest: str, worker_id: str, lease_seconds: float) -> ClaimResult:
    """Try to take the job ``digest``; a lost race or a job not yet due gives no job."""
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
    if ticket.not_before is not None and ticket.not_before > store.now():
        return ClaimResult(None, deferred=True)
    claim = new_claim(ticket, worker_id, store, lease_seconds)
    etag = store.put_if_absent(keys.queue_key(QueueState.PROCESSING, digest), claim.to_json())
    if etag is None:
        log.debug("lost the claim race for %s", digest)
        return ClaimResult(None)
    store.delete(todo)
    return ClaimResult(Job(claim=claim, etag=etag))


class Claimer:
    """Claims jobs for one worker. A LIST yields up to ``CANDIDATES_PER_LIST`` candidates; the
    ones not tried yet are tried first next time, so a long queue costs about one LIST per
    sixteen claims."""

    def __init__(
        self, store: Store, worker_id: str, lease_seconds: float, rng: random.Random | None = None
    ) -> None:
        self.store = store
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.rng = rng or random.Random()
        self._pending: deque[str] = deque()

    def _listing(self) -> list[str]:
        """Up to ``CANDIDATES_PER_LIST`` queue keys from a random point of the hash space,
        wrapping around to the start (a second LIST) only when the first comes back short."""
        start = keys.queue_key(QueueState.TODO, f"{self.rng.getrandbits(256):064x}")
        prefix = QueueState.TODO.prefix
        found = [i.key for i in self.store.list(prefix, start, limit=CANDIDATES_PER_LIST)]
        if len(found) < CANDIDATES_PER_LIST:
            wrapped = self.store.list(prefix, limit=CANDIDATES_PER_LIST - len(found))
            found += [i.key for i in wrapped if i.key <= start]
        return found

    def _try(self, key: str) -> ClaimResult:
        try:
            _, digest = keys.parse_queue_key(key)
        except ValueError:
            log.warning("ignoring a foreign object in the queue: %s", key)
            return ClaimResult(None)
        return try_claim(self.store, digest, self.worker_id, self.lease_seconds)

    def next(self) -> ClaimResult:
        """Claim one job, or report that none is claimable (and whether some are waiting)."""
        while self._pending:
            result = self._try(self._pending.popleft())
            if result.job is not None:
                return result
        deferred = False
        candidates = deque(self._listing())
        while candidates:
            result = self._try(candidates.popleft())
            if result.job is not None:
                self._pending = candidates
                return result
            deferred = deferred or result.deferred
        return ClaimResult(None, deferred=deferred)


def claim_next(store: Store, worker_id: str, lease_seconds: float) -> ClaimResult:
    """Claim one job from ``queue/todo/`` (a one-off :class:`Claimer`)."""
    return Claimer(store, worker_id, lease_seconds).next()
