"""How a job that does not finish ends: failed (back in line, or dead-lettered with its
history) or handed back at shutdown; each through one transition of the queue, under the
lease."""

from __future__ import annotations

import logging

from bucketdigest.shared import queue
from bucketdigest.shared.errors import ChainIncomplete, PermanentDigestError
from bucketdigest.shared.queue import Job
from bucketdigest.shared.records import AttemptOutcome
from bucketdigest.worker.checkpoint import Progress
from bucketdigest.worker.digesters import PRIMARY_OUTPUT
from bucketdigest.worker.job_context import JobContext, fenced
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.outcome import JobResult, Outcome

log = logging.getLogger(__name__)


def _may_retry(exc: Exception) -> bool:
    """Whether ``bucketdigest retry`` could help: not for input no attempt can read."""
    if isinstance(exc, ChainIncomplete):
        return exc.records.by_output()[PRIMARY_OUTPUT].retryable
    return not isinstance(exc, PermanentDigestError)


def fail(
    job: Job, lease: Lease, ctx: JobContext, progress: Progress, exc: Exception, trace: str
) -> JobResult:
    """Attempts left: back to todo after a backoff, with the outputs done so far saved.
    Permanent, out of attempts, or an output failed for good: the dead letter with the whole
    history and the traceback (``queue.end_attempt``)."""
    ticket = job.claim.ticket
    name = ticket.name
    message = str(exc) or type(exc).__name__
    chain = exc if isinstance(exc, ChainIncomplete) else None
    end = queue.AttemptEnd(
        outcome=AttemptOutcome.FAILED,
        error=message,
        traceback=trace,
        permanent=isinstance(exc, PermanentDigestError),
        final=chain is not None and chain.final,
        retryable=_may_retry(exc),
        outputs=chain.records.outputs if chain is not None else (),
    )

    # back in line with the outputs done so far saved, or dead-lettered: one transition, fenced
    retry = not end.is_last(ticket.attempt, ctx.retry)
    abandoned = JobResult(ticket.digest, name, Outcome.ABANDONED, error=message)
    if retry and chain is not None and not fenced(lease, lambda: progress.save(chain.records)):
        return abandoned
    if not lease.end(
        lambda etag: queue.end_attempt(ctx.store, job.claim, etag, end, ctx.retry) is not None
    ):
        return abandoned
    if not retry:
        progress.clear()

    log.warning(
        "%s (%s) failed on attempt %d%s: %s",
        name,
        ticket.digest[:12],
        ticket.attempt,
        ", will retry" if retry else "",
        message,
    )
    return JobResult(
        ticket.digest, name, Outcome.RETRYING if retry else Outcome.FAILED, error=message
    )


def hand_back(
    job: Job, lease: Lease, ctx: JobContext, progress: Progress, reason: str
) -> JobResult:
    """Shutdown: save what is done, put the job back in line untouched (same attempt)."""
    ticket = job.claim.ticket
    if not progress.unsaved or fenced(lease, progress.save):
        lease.end(lambda etag: queue.hand_back(ctx.store, ticket, etag))
    return JobResult(ticket.digest, ticket.name, Outcome.HANDED_BACK, error=reason)
