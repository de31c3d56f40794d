"""One claimed job from start to release: download, convert, zip, upload, release.

Every write after the claim checks that the lease is still ours; a lost lease abandons the
job without writing anything (the new owner's state is never touched). The result upload is a
conditional create: if a zip is already there another worker finished first, which is success.
"""

from __future__ import annotations

import logging
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from bucketdigest.shared import keys
from bucketdigest.shared.clock import format_time
from bucketdigest.shared.errors import (
    DigestError,
    Interrupted,
    NotFound,
    PermanentDigestError,
)
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Attempt, Failure, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.worker.claim import Job
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.package import build_members, write_zip
from bucketdigest.worker.sandbox import ConverterSandbox

log = logging.getLogger(__name__)


class Outcome(StrEnum):
    """How a job this worker held ended."""

    DONE = "done"
    ALREADY_DONE = "already-done"
    RETRYING = "retrying"
    FAILED = "failed"
    ABANDONED = "abandoned"
    HANDED_BACK = "handed-back"


@dataclass(frozen=True)
class JobResult:
    """What happened to one job, for logs, progress bars and summaries."""

    digest: str
    name: str
    outcome: Outcome
    pages: int = 0
    error: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class JobContext:
    """What a job needs from the worker that runs it."""

    store: Store
    sandbox: ConverterSandbox
    worker_id: str
    lease_seconds: float
    max_attempts: int
    retry_delay: float
    shutdown_reason: Callable[[], str | None]


def _ended(ticket: Ticket, job: Job, ctx: JobContext, outcome: str, error: str = "") -> Ticket:
    """``ticket`` with this attempt appended to its history."""
    attempt = Attempt(
        attempt=ticket.attempt,
        worker_id=ctx.worker_id,
        claimed_at=job.claim.claimed_at,
        ended_at=ctx.store.now(),
        outcome=outcome,
        error=error,
    )
    return replace(ticket, history=(*ticket.history, attempt))


def _info(
    job: Job, conversion_info: dict[str, Any], ctx: JobContext, timings: dict[str, float]
) -> dict[str, Any]:
    ticket = job.claim.ticket
    return {
        "digest": ticket.digest,
        "ext": ticket.ext,
        "size": ticket.size,
        "names": list(ticket.names),
        **conversion_info,
        "provenance": {
            "worker_id": ctx.worker_id,
            "attempt": ticket.attempt,
            "converted_at": format_time(ctx.store.now()),
            "seconds": {k: round(v, 3) for k, v in timings.items()},
        },
    }


def _convert_and_upload(job: Job, lease: Lease, ctx: JobContext, workdir: Path) -> int:
    """Do the work; returns the page count. Raises DigestError or Interrupted."""
    ticket = job.claim.ticket
    timings: dict[str, float] = {}
    started = time.perf_counter()
    source = workdir / f"source.{ticket.ext}"
    try:
        ctx.store.download(keys.raw_key(ticket.digest, ticket.ext), source)
    except NotFound as exc:
        raise PermanentDigestError("the raw document is missing from the store") from exc
    timings["download"] = time.perf_counter() - started

    def interrupt() -> str | None:
        if lease.lost.is_set():
            return "lease lost"
        return ctx.shutdown_reason()

    conversion = ctx.sandbox.convert(source, ticket.ext, workdir / "convert", interrupt)
    timings["convert"] = conversion.seconds
    conversion_info = {
        "pages": len(conversion.pages),
        "metadata": conversion.metadata,
        "converter": conversion.converter,
        "problems": list(conversion.problems),
        "converter_messages": conversion.messages,
    }
    members = build_members(conversion, _info(job, conversion_info, ctx, timings))
    archive = write_zip(members, workdir / "out.zip")
    if reason := interrupt():
        raise Interrupted(reason)
    if ctx.store.put_if_absent(keys.out_key(ticket.digest), archive) is None:
        log.info("%s was already finished by another worker", ticket.digest)
    return len(conversion.pages)


def _fail(job: Job, lease: Lease, ctx: JobContext, exc: Exception, trace: str) -> JobResult:
    """Attempts left: back to todo after a backoff. Permanent or out of attempts: the dead
    letter ``queue/failed/<hash>`` with the whole history and the traceback."""
    ticket = job.claim.ticket
    name = ticket.names[0] if ticket.names else ticket.digest
    message = str(exc) or type(exc).__name__
    if lease.lost.is_set():
        return JobResult(ticket.digest, name, Outcome.ABANDONED, error=message)
    ended = _ended(ticket, job, ctx, "failed", message)
    retry = not isinstance(exc, PermanentDigestError) and ticket.attempt < ctx.max_attempts
    if retry:
        delay = timedelta(seconds=ctx.retry_delay * 2 ** (ticket.attempt - 1))
        again = replace(ended, attempt=ticket.attempt + 1, not_before=ctx.store.now() + delay)
        ctx.store.put_if_absent(keys.queue_key(QueueState.TODO, ticket.digest), again.to_json())
    else:
        failure = Failure(
            ticket=ended,
            worker_id=ctx.worker_id,
            failed_at=ctx.store.now(),
            error=message,
            traceback=trace,
            retryable=not isinstance(exc, PermanentDigestError),
        )
        ctx.store.put(keys.queue_key(QueueState.FAILED, ticket.digest), failure.to_json())
    lease.release()
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


def _hand_back(job: Job, lease: Lease, ctx: JobContext, reason: str) -> JobResult:
    """Shutdown: put the job back in line untouched (same attempt) and end our claim."""
    ticket = job.claim.ticket
    if not lease.lost.is_set():
        ctx.store.put_if_absent(keys.queue_key(QueueState.TODO, ticket.digest), ticket.to_json())
        lease.release()
    return JobResult(ticket.digest, ticket.names[0], Outcome.HANDED_BACK, error=reason)


def run_job(job: Job, ctx: JobContext) -> JobResult:
    """Run one claimed job to its end; never raises for a document's own failure."""
    ticket = job.claim.ticket
    name = ticket.names[0] if ticket.names else ticket.digest
    started = time.perf_counter()
    with Lease(ctx.store, job, ctx.lease_seconds) as lease:
        if ctx.store.head(keys.out_key(ticket.digest)) is not None:
            lease.release()
            return JobResult(ticket.digest, name, Outcome.ALREADY_DONE)
        try:
            with tempfile.TemporaryDirectory(prefix="bucketdigest-job-") as workdir:
                pages = _convert_and_upload(job, lease, ctx, Path(workdir))
        except Interrupted as exc:
            if lease.lost.is_set():
                log.warning("abandoning %s: %s", name, exc)
                return JobResult(ticket.digest, name, Outcome.ABANDONED, error=str(exc))
            return _hand_back(job, lease, ctx, str(exc))
        except DigestError as exc:
            return _fail(job, lease, ctx, exc, exc.detail or traceback.format_exc())
        except Exception as exc:
            return _fail(job, lease, ctx, exc, traceback.format_exc())
        lease.release()
    return JobResult(
        ticket.digest, name, Outcome.DONE, pages=pages, seconds=time.perf_counter() - started
    )
