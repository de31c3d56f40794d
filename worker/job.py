"""One claimed job from start to release: download, run the digest chain, zip, upload, release.

Every write after the claim checks that the lease is still ours; a lost lease abandons the
job without writing anything more (the new owner's state is never touched). The result upload
is a conditional create: if a zip is already there another worker finished first, which is
success. When a result exists and ``work/<hash>/`` holds a reprocess request, the existing zip
is the starting point and is replaced only if it is still the version we started from.

How a job ends follows from its outputs' records: all final with the text completed → the
zip; the text failed for good → ``queue/failed/``; otherwise → back to ``queue/todo/`` after a
backoff, the records kept in ``work/<hash>/`` so only what failed runs again.
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
from bucketdigest.shared.filetypes import FileType, UnsupportedFileType, file_type
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.pending import has_pending_work
from bucketdigest.shared.records import (
    Attempt,
    DigestRecords,
    Failure,
    OutputRecord,
    OutputStatus,
    Ticket,
)
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.worker.chain import ChainPlan, is_finished, run_chain, run_digester
from bucketdigest.worker.claim import Job
from bucketdigest.worker.digesters import CHAIN, PRIMARY_OUTPUT, RESETS, digester_named
from bucketdigest.worker.digesters.base import DigestContext, Digester, DigestSettings, Produced
from bucketdigest.worker.digesters.state import plan
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.package import build_members, write_zip
from bucketdigest.worker.progress import (
    clear_progress,
    load_progress,
    save_output,
    save_records,
)
from bucketdigest.worker.sandbox import Sandbox

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
    sandbox: Sandbox
    digest: DigestSettings
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


class ChainIncomplete(DigestError):
    """The chain ended with outputs that are not final, or with the primary text failed."""

    def __init__(self, records: DigestRecords, final: bool) -> None:
        failed = [r for r in records.outputs if r.status is OutputStatus.FAILED]
        lost = {r.output for r in failed}
        causes = [r for r in failed if not lost & set(digester_named(r.digester).needs)]
        message = "; ".join(f"{r.digester} failed: {r.error}" for r in causes)
        if final:  # the document is lost: say why in the words of its text's failure
            message = records.by_output()[PRIMARY_OUTPUT].error
        detail = "\n".join(
            f"{r.output} ({r.digester} {r.digester_version}), attempt {r.attempts}: {r.error}"
            for r in failed
        )
        super().__init__(message or "digest chain incomplete", detail)
        self.records = records
        self.final = final
        """True when the primary output failed for good: no retry can finish the document."""


def _info(
    job: Job, records: DigestRecords, ctx: JobContext, seconds: dict[str, float]
) -> dict[str, Any]:
    ticket = job.claim.ticket
    markdown = records.by_output()[PRIMARY_OUTPUT].content or {}
    failed = [
        f"{r.output} failed: {r.error}" for r in records.outputs if r.status is OutputStatus.FAILED
    ]
    return {
        "digest": ticket.digest,
        "ext": ticket.ext,
        "file_type": records.file_type,
        "size": ticket.size,
        "names": list(ticket.names),
        "pages": markdown.get("pages", 0),
        "metadata": markdown.get("metadata", {}),
        "converter": markdown.get("converter", {}),
        "problems": [*markdown.get("problems", []), *failed],
        "converter_messages": markdown.get("converter_messages", ""),
        "outputs": {r.output: r.status.value for r in records.outputs},
        "provenance": {
            "worker_id": ctx.worker_id,
            "attempt": ticket.attempt,
            "converted_at": format_time(ctx.store.now()),
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
        },
    }


def _digest_and_upload(
    job: Job, lease: Lease, ctx: JobContext, workdir: Path, previous: ObjectInfo | None
) -> int:
    """Run the chain and upload the result; returns the page count. Raises ChainIncomplete,
    DigestError or Interrupted. ``previous`` is the existing result when reprocessing."""
    ticket = job.claim.ticket
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    try:
        kind = file_type(ticket.ext)
    except UnsupportedFileType as exc:
        raise PermanentDigestError(str(exc)) from exc

    def interrupt() -> str | None:
        if lease.lost.is_set():
            return "lease lost"
        return ctx.shutdown_reason()

    def guard() -> None:
        if reason := interrupt():
            raise Interrupted(reason)

    source = workdir / f"source.{ticket.ext}"
    try:
        ctx.store.download(keys.raw_key(ticket.digest, ticket.ext), source)
    except NotFound as exc:
        raise PermanentDigestError("the raw document is missing from the store") from exc
    previous_zip = None
    if previous is not None:
        previous_zip = workdir / "previous.zip"
        ctx.store.download(keys.out_key(ticket.digest), previous_zip)
    seconds["download"] = time.perf_counter() - started
    tree = workdir / "tree"
    tree.mkdir()
    resumed = load_progress(ctx.store, ticket.digest, tree, previous_zip, ctx.store.now)
    records = plan(CHAIN, kind, ctx.store.now(), resumed)

    def execute(digester: Digester, dctx: DigestContext) -> dict[str, Produced]:
        began = time.perf_counter()
        try:
            return ctx.sandbox.call(run_digester, digester.name, dctx, interrupt=interrupt)
        finally:
            seconds[digester.name] = time.perf_counter() - began

    def persist(digester: Digester, now: dict[str, OutputRecord], files: dict[str, bytes]) -> None:
        # Renew the claim first: a worker paused past its lease (a zombie) learns here, not
        # after its progress has landed beside the new owner's.
        lease.heartbeat()
        guard()
        save_output(ctx.store, ticket.digest, digester.name, files)
        save_records(ctx.store, _records(ticket.digest, kind, now))

    dctx = DigestContext(ticket.digest, source, kind, tree, workdir / "scratch", ctx.digest)
    chain_plan = ChainPlan(CHAIN, RESETS, ctx.max_attempts)
    final = run_chain(chain_plan, records, dctx, execute, persist, ctx.store.now)
    ctx.sandbox.document_done()
    result = _records(ticket.digest, kind, final)
    primary = final[PRIMARY_OUTPUT]
    if primary.status is not OutputStatus.COMPLETED or not is_finished(final, ctx.max_attempts):
        text_lost = primary.status is OutputStatus.FAILED and primary.is_terminal(ctx.max_attempts)
        raise ChainIncomplete(result, final=text_lost)
    members = build_members(result, tree, _info(job, result, ctx, seconds))
    archive = write_zip(members, workdir / "out.zip")
    guard()
    if previous is None:
        if ctx.store.put_if_absent(keys.out_key(ticket.digest), archive) is None:
            log.info("%s was already finished by another worker", ticket.digest)
    elif (
        ctx.store.put_if_match(keys.out_key(ticket.digest), archive.read_bytes(), previous.etag)
        is None
    ):
        log.info("%s: the result changed while we reprocessed it; keeping the newer", ticket.digest)
    clear_progress(ctx.store, ticket.digest)
    return int((primary.content or {}).get("pages", 0))


def _records(digest: str, kind: FileType, records: dict[str, OutputRecord]) -> DigestRecords:
    return DigestRecords(digest=digest, file_type=str(kind), outputs=tuple(records.values()))


def _may_retry(exc: Exception) -> bool:
    """Whether ``bucketdigest retry`` could help: not for input no attempt can read."""
    if isinstance(exc, ChainIncomplete):
        return exc.records.by_output()[PRIMARY_OUTPUT].retryable
    return not isinstance(exc, PermanentDigestError)


def _fail(job: Job, lease: Lease, ctx: JobContext, exc: Exception, trace: str) -> JobResult:
    """Attempts left: back to todo after a backoff. Permanent or out of attempts: the dead
    letter ``queue/failed/<hash>`` with the whole history and the traceback."""
    ticket = job.claim.ticket
    name = ticket.names[0] if ticket.names else ticket.digest
    message = str(exc) or type(exc).__name__
    if lease.lost.is_set():
        return JobResult(ticket.digest, name, Outcome.ABANDONED, error=message)
    ended = _ended(ticket, job, ctx, "failed", message)
    if isinstance(exc, ChainIncomplete):
        retry = not exc.final
        outputs = exc.records.outputs
    else:
        retry = not isinstance(exc, PermanentDigestError) and ticket.attempt < ctx.max_attempts
        outputs = ()
    if retry:
        if isinstance(exc, ChainIncomplete):
            save_records(ctx.store, exc.records)
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
            retryable=_may_retry(exc),
            outputs=outputs,
        )
        ctx.store.put(keys.queue_key(QueueState.FAILED, ticket.digest), failure.to_json())
        clear_progress(ctx.store, ticket.digest)
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
        previous = ctx.store.head(keys.out_key(ticket.digest))
        if previous is not None and not has_pending_work(ctx.store, ticket.digest):
            lease.release()
            return JobResult(ticket.digest, name, Outcome.ALREADY_DONE)
        try:
            with tempfile.TemporaryDirectory(prefix="bucketdigest-job-") as workdir:
                pages = _digest_and_upload(job, lease, ctx, Path(workdir), previous)
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
