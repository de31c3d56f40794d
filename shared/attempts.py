"""Attempts: how often a document is tried, how long it waits between tries, and the history
each try leaves on its ticket."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bucketdigest.shared.records import Attempt, AttemptOutcome, Claim, Ticket

MAX_ATTEMPTS = 3
"""Attempts at a document before it is dead-lettered: the default of every setting and option
that says how many (worker, monitor, ``--max-attempts``)."""
LEASE_SECONDS = 300.0
"""How long a claim lasts without a heartbeat, unless the bucket sets ``lease_seconds``."""
RETRY_DELAY = 30.0
MAX_BACKOFF = timedelta(days=1)
"""The longest a document waits between attempts, however many it is allowed."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often a document is tried and how long it waits between attempts."""

    max_attempts: int = MAX_ATTEMPTS
    retry_delay: float = RETRY_DELAY
    """Backoff before attempt n+1 is ``retry_delay * 2**(n-1)`` seconds, at most
    :data:`MAX_BACKOFF`."""

    def budget(self, ticket: Ticket) -> int:
        """The attempts ``ticket`` is allowed: its own budget, else this policy's. The one
        answer to "how many attempts" for the document and for each of its outputs."""
        return ticket.max_attempts or self.max_attempts

    def gives_up(self, ticket: Ticket, permanent: bool = False) -> bool:
        """Whether a failure of ``ticket``'s current attempt is final: the one retry decision,
        for workers and the monitor alike."""
        return permanent or ticket.attempt >= self.budget(ticket)

    def next_attempt(self, ticket: Ticket, now: datetime, backoff: bool = True) -> Ticket:
        """The ticket of the following attempt, due after the backoff (or at once)."""
        doublings = min(max(ticket.attempt - 1, 0), 17)  # 2**17 > MAX_BACKOFF / one second
        delay = min(timedelta(seconds=self.retry_delay * 2**doublings), MAX_BACKOFF)
        return replace(
            ticket, attempt=ticket.attempt + 1, not_before=now + delay if backoff else None
        )


def with_attempt(
    ticket: Ticket, claim: Claim, ended_at: datetime, outcome: AttemptOutcome, error: str = ""
) -> Ticket:
    """``ticket`` with the attempt that ``claim`` made appended to its history (so no longer
    untouched: the attempt may have left progress)."""
    attempt = Attempt(
        attempt=ticket.attempt,
        worker_id=claim.worker_id,
        claimed_at=claim.claimed_at,
        ended_at=ended_at,
        outcome=outcome,
        error=error,
    )
    return replace(ticket, history=(*ticket.history, attempt), untouched=False)
