"""Claiming a job: the conditional create of ``queue/processing/<hash>`` decides who owns it.

Candidates are listed from a random point of the hash space (``StartAfter``), wrapping around
to the start, so a claim costs one small LIST whatever the queue length and concurrent workers
rarely contend for the same keys.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass
from datetime import timedelta

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim, Ticket
from bucketdigest.shared.store import Store

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
        log.error("skipping %s: %s", todo, exc)
        return ClaimResult(None)
    if ticket.not_before is not None and ticket.not_before > store.now():
        return ClaimResult(None, deferred=True)
    claim = new_claim(ticket, worker_id, store, lease_seconds)
    etag = store.put_if_absent(keys.queue_key(QueueState.PROCESSING, digest), claim.to_json())
    if etag is None:
        log.debug("lost the claim race for %s", digest)
        return ClaimResult(None)
    store.delete(todo)
    return ClaimResult(Job(claim=claim, etag=etag))


def claim_next(
    store: Store, worker_id: str, lease_seconds: float, rng: random.Random | None = None
) -> ClaimResult:
    """Claim one job from ``queue/todo/``, starting the scan at a random hash."""
    rng = rng or random.Random()
    start = keys.queue_key(QueueState.TODO, f"{rng.getrandbits(256):064x}")
    deferred = False
    seen: set[str] = set()
    for start_after in (start, ""):
        for info in store.list(
            QueueState.TODO.prefix, start_after=start_after, limit=CANDIDATES_PER_LIST
        ):
            if info.key in seen:
                continue
            seen.add(info.key)
            try:
                _, digest = keys.parse_queue_key(info.key)
            except ValueError:
                log.warning("ignoring a foreign object in the queue: %s", info.key)
                continue
            result = try_claim(store, digest, worker_id, lease_seconds)
            if result.job is not None:
                return result
            deferred = deferred or result.deferred
    return ClaimResult(None, deferred=deferred)
