"""The records a job carries through the queue: its ticket, a claim on it, its past attempts
and, when it is dead-lettered, its failure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bucketdigest.shared.keys import Priority
from bucketdigest.shared.records.base import JsonRecord
from bucketdigest.shared.records.outputs import OutputRecord


class AttemptOutcome(StrEnum):
    """How an attempt that did not finish its document ended, as its ticket's history says."""

    FAILED = "failed"
    """The worker ran the job and an error stopped it."""
    LEASE_EXPIRED = "lease expired"
    """The worker was lost (killed, frozen, cut off): the monitor found its lease over."""


@dataclass(frozen=True)
class Attempt(JsonRecord):
    """One past attempt at a job: who, when, and how it ended."""

    attempt: int
    worker_id: str
    claimed_at: datetime
    ended_at: datetime
    outcome: AttemptOutcome
    error: str = ""


@dataclass(frozen=True)
class Ticket(JsonRecord):
    """What every queue marker says about the job itself; it travels todo → processing → failed."""

    digest: str
    ext: str
    size: int
    names: tuple[str, ...]
    enqueued_at: datetime
    attempt: int = 1
    history: tuple[Attempt, ...] = ()
    not_before: datetime | None = None
    priority: Priority = Priority.NORMAL
    supersedes: str = ""
    """The document its path held before (the previous revision), when there was one."""
    max_attempts: int | None = None
    """Its attempt budget, fixed when it was queued (the bucket's ``max_attempts`` then), so
    the monitor and every worker agree on when it is out of attempts. None on tickets queued
    before budgets: the policy's (:meth:`RetryPolicy.budget`)."""

    @property
    def name(self) -> str:
        """What people call the document: the first path it was ingested as, else its hash."""
        return self.names[0] if self.names else self.digest


@dataclass(frozen=True)
class Claim(JsonRecord):
    """The processing marker: who holds the job, under which token, until when."""

    ticket: Ticket
    worker_id: str
    token: str
    claimed_at: datetime
    heartbeat_at: datetime
    lease_until: datetime
    hold: bool = False
    """Held for an operation on the whole document (a purge), not claimed to run it: when its
    holder dies, the hold is dropped and the document left as it was, never requeued."""


@dataclass(frozen=True)
class Failure(JsonRecord):
    """The failed marker: the last error with its traceback, whether a retry may help, and
    the record of every output as the last attempt left them."""

    ticket: Ticket
    worker_id: str
    failed_at: datetime
    error: str
    traceback: str = ""
    retryable: bool = True
    outputs: tuple[OutputRecord, ...] = ()
