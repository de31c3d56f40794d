"""What a worker that is not trusted (a brokered worker, :mod:`bucketdigest.serve.broker`) may
write to the queue for the claim it holds, judged against the claim as the server read it.

A worker needs exactly these transitions: renew its lease, requeue or hand back the job, and
dead-letter it; each must carry the document's ticket as it was queued (its names, lane,
budget, the result it supersedes) with only what an attempt changes (its number, its history,
its backoff). Each function returns why a write is refused, or None when it is one of those.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from bucketdigest.shared.records import Claim, Failure, Ticket

LEASE_SLACK = timedelta(seconds=5)
"""Clock skew a renewal may carry past the bucket's lease length."""


def vet_renewal(held: Claim, new: Claim, now: datetime, lease_seconds: float) -> str | None:
    """A renewal changes the heartbeat and the lease's end, within the bucket's lease."""
    if replace(new, heartbeat_at=held.heartbeat_at, lease_until=held.lease_until) != held:
        return "a renewal changes only the heartbeat and the lease's end"
    if new.lease_until - now > timedelta(seconds=lease_seconds) + LEASE_SLACK:
        return f"a lease may last at most the bucket's lease_seconds ({lease_seconds:g} s)"
    return None


def vet_ticket(held: Claim, ticket: Ticket) -> str | None:
    """A requeued or handed-back ticket is the claim's, at this attempt or the next, its
    history the claim's with this attempt's added, no longer untouched."""
    was = held.ticket
    if ticket.attempt not in (was.attempt, was.attempt + 1):
        return f"the next attempt is {was.attempt} or {was.attempt + 1}, not {ticket.attempt}"
    if (
        ticket.history[: len(was.history)] != was.history
        or len(ticket.history) > len(was.history) + 1
    ):
        return "a ticket's history only gains the attempt that ended"
    added = ticket.history[len(was.history) :]
    if any(a.attempt != was.attempt or a.worker_id != held.worker_id for a in added):
        return "the attempt added is the claim's own"
    if ticket.untouched:
        return "a ticket that leaves processing is never untouched: its job ran"
    same = replace(
        ticket,
        attempt=was.attempt,
        history=was.history,
        not_before=was.not_before,
        untouched=was.untouched,
    )
    if same != was:
        return "a ticket keeps the document's names, lane, budget and what it supersedes"
    return None


def vet_failure(held: Claim, failure: Failure) -> str | None:
    """A dead letter carries the claim's ticket (its last attempt added) and its worker."""
    if failure.worker_id != held.worker_id:
        return "a dead letter names the worker that held the claim"
    return vet_ticket(held, failure.ticket)
