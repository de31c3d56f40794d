"""One claimed job from start to end: download, run the digest chain, zip, upload, release.

Every write after the claim checks that the lease is still ours; a lost lease abandons the
job without writing anything more (the new owner's state is never touched). The result upload
is a conditional create: if a zip is already there another worker finished first, which is
success. When a result exists and ``work/<hash>/`` holds a reprocess request, the existing zip
is the starting point and is replaced only if it is still the version we started from.

How a job ends follows from its outputs' records: all final with the text completed → the
zip; the text failed for good → ``queue/failed/``; otherwise → back to ``queue/todo/`` after a
backoff, the records kept in a checkpoint so only what failed runs again. Every way out of
``processing`` is a transition of :mod:`bucketdigest.shared.queue`, run through the lease.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
import traceback
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.clock import format_time
from bucketdigest.shared.errors import (
    DigestError,
    Interrupted,
    NotFound,
    PermanentDigestError,
)
from bucketdigest.shared.filetypes import FileType, UnsupportedFileType, file_type
from bucketdigest.shared.pending import has_pending_work
from bucketdigest.shared.queue import Job
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.result import damage
from bucketdigest.shared.store import ObjectInfo
from bucketdigest.worker.chain import ChainPlan, incomplete, is_finished, run_chain
from bucketdigest.worker.checkpoint import PARTIAL_DIR, Progress
from bucketdigest.worker.digester import DigestContext
from bucketdigest.worker.digesters import CHAIN, PRIMARY_OUTPUT, RESETS, primary_digester
from bucketdigest.worker.job_context import JobContext
from bucketdigest.worker.job_end import fail, hand_back
from bucketdigest.worker.job_hooks import JobHooks
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.outcome import JobResult, Outcome
from bucketdigest.worker.output_state import plan
from bucketdigest.worker.package import build_members, info, write_zip
from bucketdigest.worker.predecessor import download_predecessor

log = logging.getLogger(__name__)

COUNT_SECONDS = 120.0
"""Limit on reading a document's page count (the digester child may still be starting)."""


def _records(digest: str, kind: FileType, records: dict[str, OutputRecord]) -> DigestRecords:
    return DigestRecords(digest=digest, file_type=str(kind), outputs=tuple(records.values()))


def _interrupt_reason(lease: Lease, ctx: JobContext) -> str | None:
    return "lease lost" if lease.lost.is_set() else ctx.shutdown_reason()


def _guard(lease: Lease, ctx: JobContext) -> None:
    if reason := _interrupt_reason(lease, ctx):
        raise Interrupted(reason)


def _digest_and_upload(
    job: Job,
    lease: Lease,
    ctx: JobContext,
    progress: Progress,
    workdir: Path,
    previous: ObjectInfo | None,
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
    source = workdir / f"source.{ticket.ext}"
    try:
        ctx.store.download(keys.raw_key(ticket.digest, ticket.ext), source)
    except NotFound as exc:
        raise PermanentDigestError("the raw document is missing from the store") from exc
    with source.open("rb") as handle:
        if hashlib.file_digest(handle, "sha256").hexdigest() != ticket.digest:
            raise PermanentDigestError(
                f"{keys.raw_key(ticket.digest, ticket.ext)} is damaged: its bytes do not have "
                f"its hash (`bucketdigest retry {ticket.digest[:12]}` fetches it again from "
                "where it was ingested)"
            )
    previous_zip = None
    if previous is not None:
        previous_zip = workdir / "previous.zip"
        ctx.store.download(keys.out_key(ticket.digest), previous_zip)
        if reason := damage(previous_zip):
            log.warning("%s: the result being replaced is damaged (%s)", ticket.digest, reason)
            previous_zip = None  # every output is made again from the source
    predecessor = download_predecessor(ctx.store, ticket, workdir)
    seconds["download"] = time.perf_counter() - started
    # every digester's time limit grows with the document's size (pages, minutes of sound)
    size = primary_digester().size
    pages = max(1, ctx.sandbox.call(size, source, kind, timeout=COUNT_SECONDS))
    tree = workdir / "tree"
    tree.mkdir()
    records = plan(CHAIN, kind, ctx.store.now(), progress.load(tree, previous_zip, ctx.store.now))

    hooks = JobHooks(lease, ctx, progress, tree / PARTIAL_DIR, pages, seconds)
    hooks.latest = _records(ticket.digest, kind, records)
    dctx = DigestContext(
        ticket.digest,
        source,
        kind,
        tree,
        workdir / "scratch",
        ctx.digest,
        partial=hooks.partial,
        predecessor=predecessor,
    )
    chain_plan = ChainPlan(CHAIN, RESETS, ctx.retry.max_attempts)
    final = run_chain(chain_plan, records, dctx, hooks, ctx.store.now)
    ctx.sandbox.document_done()
    result = _records(ticket.digest, kind, final)
    primary = final[PRIMARY_OUTPUT]
    if primary.status is not OutputStatus.COMPLETED or not is_finished(
        final, ctx.retry.max_attempts
    ):
        lost = primary.status is OutputStatus.FAILED and primary.is_terminal(ctx.retry.max_attempts)
        raise incomplete(result, final=lost)
    provenance = {
        "worker_id": ctx.worker_id,
        "attempt": ticket.attempt,
        "converted_at": format_time(ctx.store.now()),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }
    members = build_members(result, tree, info(ticket, result, primary, provenance))
    archive = write_zip(members, workdir / "out.zip")
    _guard(lease, ctx)
    if previous is None:
        if ctx.store.put_if_absent(keys.out_key(ticket.digest), archive) is None:
            log.info("%s was already finished by another worker", ticket.digest)
    elif (
        ctx.store.put_if_match(keys.out_key(ticket.digest), archive.read_bytes(), previous.etag)
        is None
    ):
        log.info("%s: the result changed while we reprocessed it; keeping the newer", ticket.digest)
    progress.clear()
    return int((primary.content or {}).get("pages", 0))


def run_job(job: Job, ctx: JobContext) -> JobResult:
    """Run one claimed job to its end; never raises for a document's own failure."""
    ticket = job.claim.ticket
    name = ticket.name
    started = time.perf_counter()

    def finish(etag: str) -> bool:
        return queue.finish(ctx.store, ticket.digest, etag)

    with Lease(ctx.store, job, ctx.lease_seconds) as lease:
        previous = ctx.store.head(keys.out_key(ticket.digest))
        if previous is not None and not has_pending_work(ctx.store, ticket.digest):
            lease.end(finish)
            return JobResult(ticket.digest, name, Outcome.ALREADY_DONE)
        progress = Progress(ctx.store, ticket.digest, ctx.checkpoint_after)
        try:
            with tempfile.TemporaryDirectory(prefix="bucketdigest-job-") as workdir:
                pages = _digest_and_upload(job, lease, ctx, progress, Path(workdir), previous)
        except Interrupted as exc:
            if lease.lost.is_set():
                log.warning("abandoning %s: %s", name, exc)
                return JobResult(ticket.digest, name, Outcome.ABANDONED, error=str(exc))
            return hand_back(job, lease, ctx, progress, str(exc))
        except DigestError as exc:
            return fail(job, lease, ctx, progress, exc, exc.detail or traceback.format_exc())
        except Exception as exc:
            return fail(job, lease, ctx, progress, exc, traceback.format_exc())
        finished = lease.end(finish)
    if finished and ctx.delete_source:  # the result is written and the job is ours alone
        ctx.store.delete(keys.raw_key(ticket.digest, ticket.ext))
    return JobResult(
        ticket.digest, name, Outcome.DONE, pages=pages, seconds=time.perf_counter() - started
    )
