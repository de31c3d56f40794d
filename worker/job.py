"""One claimed job from start to end: download, run the digest chain, zip, upload, release,
and every way a job ends.

What a job needs from its worker (:class:`JobContext`) and the fence every write after the claim
goes through (:func:`fenced`: a worker paused past its lease learns it before anything of its
lands beside the new owner's); what the chain asks of the job running it (:class:`JobHooks`:
run a digester in the sandbox, stop when the lease is lost or the worker shuts down, save the
job's progress when a checkpoint is due); the job itself (:func:`run_job`); and how a job that
does not finish ends (:func:`fail`, :func:`hand_back`), each through one transition of
:mod:`bucketdigest.shared.queue`, under the lease; and how it ended, as logs, progress bars and
summaries report it (:class:`Outcome`, :class:`JobResult`).

Every write after the claim checks that the lease is still ours; a lost lease abandons the
job without writing anything more (the new owner's state is never touched). The result upload
is a conditional create: if a zip is already there another worker finished first, which is
success. When a result exists and ``work/<hash>/`` holds a reprocess request, the existing zip
is the starting point and is replaced only if it is still the version we started from (a
damaged one is not read: every output is made again from the source).

How a job ends follows from its outputs' records: all final with the text completed → the
zip; the text failed for good → ``queue/failed/``; otherwise → back to ``queue/todo/`` after a
backoff, the records kept in a checkpoint so only what failed runs again.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.attempts import RetryPolicy
from bucketdigest.shared.chain import PRIMARY_OUTPUT, RESETS
from bucketdigest.shared.clock import format_time
from bucketdigest.shared.errors import (
    ChainIncomplete,
    DigestError,
    Interrupted,
    NotFound,
    PermanentDigestError,
)
from bucketdigest.shared.events import Outbox, Webhooks
from bucketdigest.shared.filetypes import FileType, UnsupportedFileType, file_type
from bucketdigest.shared.pending import has_pending_work
from bucketdigest.shared.queue import Job
from bucketdigest.shared.records import (
    AttemptOutcome,
    DigestRecords,
    OutputRecord,
    OutputStatus,
)
from bucketdigest.shared.result import damage
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.worker.chain import ChainPlan, incomplete, is_finished, run_chain, run_digester
from bucketdigest.worker.checkpoint import PARTIAL_DIR, Progress
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.digesters import CHAIN, primary_digester
from bucketdigest.worker.isolation import call_isolating_pages
from bucketdigest.worker.lease import Lease
from bucketdigest.worker.output_state import plan
from bucketdigest.worker.package import build_members, info, write_zip
from bucketdigest.worker.predecessor import download_predecessor
from bucketdigest.worker.sandbox import Sandbox

log = logging.getLogger(__name__)

COUNT_SECONDS = 120.0
"""Limit on reading a document's page count (the digester child may still be starting)."""


class Outcome(StrEnum):
    """How a job this worker held ended."""

    DONE = "done"
    ALREADY_DONE = "already-done"
    RETRYING = "retrying"
    FAILED = "failed"
    ABANDONED = "abandoned"
    HANDED_BACK = "handed-back"

    @property
    def ends_document(self) -> bool:
        """Whether the document's fate is settled (a retry or a hand-back is not)."""
        return self in (Outcome.DONE, Outcome.ALREADY_DONE, Outcome.FAILED)


@dataclass(frozen=True)
class JobResult:
    """What happened to one job."""

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
    retry: RetryPolicy
    shutdown_reason: Callable[[], str | None]
    checkpoint_after: float
    """Write a checkpoint once the unsaved digesters' work took this many seconds."""
    settings_version: int = 0
    """The version of the bucket's settings the job follows (``info.json`` records it)."""
    chain_settings_version: int = 0
    delete_source: bool = False
    """Delete ``store/raw/<hash>`` once the result is written (``--delete-source-when-done``)."""
    on_digester: Callable[[str, float], None] = lambda name, seconds: None
    """Told each digester's name and seconds once it ends, however it ended (for metrics)."""
    webhooks: Webhooks = field(default_factory=Webhooks)
    """Where the bucket's events go (none: no event is made)."""
    outbox: Outbox | None = None

    @property
    def announce(self) -> queue.Announce | None:
        """How the job's transitions report a document done or failed for good: recorded in
        the bucket, then sent by the outbox (None: the bucket has no event endpoints)."""
        outbox, hooks = self.outbox, self.webhooks
        if not hooks.endpoints or outbox is None:
            return None
        return lambda event: outbox.announce(event, hooks)


def fenced(lease: Lease, write: Callable[[], object]) -> bool:
    """Renew the claim, then write: a worker paused past its lease (a zombie) learns it here,
    before anything of its lands beside the new owner's. False if the lease is lost."""
    lease.heartbeat()
    if lease.lost.is_set():
        return False
    write()
    return True


def _interrupt_reason(lease: Lease, ctx: JobContext) -> str | None:
    return "lease lost" if lease.lost.is_set() else ctx.shutdown_reason()


def _guard(lease: Lease, ctx: JobContext) -> None:
    if reason := _interrupt_reason(lease, ctx):
        raise Interrupted(reason)


class JobHooks:
    """One job's side of the chain: ``execute`` and ``persist`` (and ``poll`` while a digester
    runs). ``latest`` is the records as the chain last reported them."""

    def __init__(
        self,
        lease: Lease,
        ctx: JobContext,
        progress: Progress,
        partial: Path,
        pages: int,
        seconds: dict[str, float],
    ) -> None:
        self.lease = lease
        self.ctx = ctx
        self.progress = progress
        self.partial = partial
        """Where digesters leave the finished parts of a long document (checkpointed too)."""
        self.pages = pages
        self.seconds = seconds
        self.latest: DigestRecords | None = None

    def interrupt_reason(self) -> str | None:
        return _interrupt_reason(self.lease, self.ctx)

    def poll(self) -> str | None:
        """Asked several times a second while a digester runs: stop, or save its finished
        parts (a long document's Markdown, range by range) when a checkpoint is due."""
        reason = self.interrupt_reason()
        due = reason is None and self.progress.partial_due(self.partial)
        if due and not fenced(self.lease, lambda: self.progress.save(self.latest)):
            return "lease lost"
        return reason

    def execute(self, digester: Digester, dctx: DigestContext) -> dict[str, Produced]:
        began = time.perf_counter()
        try:
            return call_isolating_pages(
                lambda: self.ctx.sandbox.call(
                    run_digester, digester.name, dctx, interrupt=self.poll, pages=self.pages
                ),
                self.partial / digester.name,
            )
        except (DigestError, Interrupted):
            if self.latest is not None:
                self.progress.note_partial(self.partial, self.latest)
            raise
        finally:
            self.seconds[digester.name] = time.perf_counter() - began
            self.ctx.on_digester(digester.name, self.seconds[digester.name])

    def persist(
        self, done: Digester, now: dict[str, OutputRecord], files: dict[str, bytes]
    ) -> None:
        shutil.rmtree(self.partial / done.name, ignore_errors=True)  # its parts are in its output
        assert self.latest is not None
        self.latest = DigestRecords(self.latest.digest, self.latest.file_type, tuple(now.values()))
        due = self.progress.completed(self.latest, files)
        if due and not fenced(self.lease, self.progress.save):
            raise Interrupted("lease lost")


def _records(digest: str, kind: FileType, records: dict[str, OutputRecord]) -> DigestRecords:
    return DigestRecords(digest=digest, file_type=str(kind), outputs=tuple(records.values()))


def _digest_and_upload(
    job: Job,
    lease: Lease,
    ctx: JobContext,
    progress: Progress,
    workdir: Path,
    previous: ObjectInfo | None,
) -> tuple[int, DigestRecords]:
    """Run the chain and upload the result; returns the page count and the outputs' records.
    Raises ChainIncomplete,
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
    settings = ctx.digest.for_document(ticket.settings)
    dctx = DigestContext(
        ticket.digest,
        source,
        kind,
        tree,
        workdir / "scratch",
        settings,
        partial=hooks.partial,
        predecessor=predecessor,
    )
    budget = ctx.retry.budget(ticket)
    final = run_chain(ChainPlan(CHAIN, RESETS, budget), records, dctx, hooks, ctx.store.now)
    ctx.sandbox.document_done()
    result = _records(ticket.digest, kind, final)
    primary = final[PRIMARY_OUTPUT]
    if primary.status is not OutputStatus.COMPLETED or not is_finished(final, budget):
        lost = primary.status is OutputStatus.FAILED and primary.is_terminal(budget)
        raise incomplete(result, final=lost)
    provenance = {
        "worker_id": ctx.worker_id,
        "attempt": ticket.attempt,
        "converted_at": format_time(ctx.store.now()),
        "settings_version": ctx.settings_version,
        "chain_settings_version": ctx.chain_settings_version,
        "chain_settings": settings.as_settings(),
        "document_settings": ticket.settings.chosen() if ticket.settings else None,
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
    return int((primary.content or {}).get("pages", 0)), result


def run_job(job: Job, ctx: JobContext) -> JobResult:
    """Run one claimed job to its end; never raises for a document's own failure."""
    ticket = job.claim.ticket
    name = ticket.name
    started = time.perf_counter()

    def finish(etag: str) -> bool:
        return queue.finish(ctx.store, ticket.digest, etag)

    def finish_with_event(made: DigestRecords) -> Callable[[str], bool]:
        return lambda etag: queue.finish(
            ctx.store, ticket.digest, etag, ctx.announce, ticket.names, made.outputs
        )

    with Lease(ctx.store, job, ctx.lease_seconds) as lease:
        # an untouched ticket's document has no result and no progress to look for
        previous = None if ticket.untouched else ctx.store.head(keys.out_key(ticket.digest))
        if previous is not None and not has_pending_work(ctx.store, ticket.digest):
            lease.end(finish)
            return JobResult(ticket.digest, name, Outcome.ALREADY_DONE)
        progress = Progress(
            ctx.store, ticket.digest, ctx.checkpoint_after, saved=not ticket.untouched
        )
        try:
            with tempfile.TemporaryDirectory(prefix="bucketdigest-job-") as workdir:
                pages, made = _digest_and_upload(job, lease, ctx, progress, Path(workdir), previous)
        except Interrupted as exc:
            if lease.lost.is_set():
                log.warning("abandoning %s: %s", name, exc)
                return JobResult(ticket.digest, name, Outcome.ABANDONED, error=str(exc))
            return hand_back(job, lease, ctx, progress, str(exc))
        except DigestError as exc:
            return fail(job, lease, ctx, progress, exc, exc.detail or traceback.format_exc())
        except Exception as exc:
            return fail(job, lease, ctx, progress, exc, traceback.format_exc())
        finished = lease.end(finish_with_event(made))
    if finished and ctx.delete_source:  # the result is written and the job is ours alone
        ctx.store.delete(keys.raw_key(ticket.digest, ticket.ext))
    return JobResult(
        ticket.digest, name, Outcome.DONE, pages=pages, seconds=time.perf_counter() - started
    )


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
    retry = not end.is_last(ticket, ctx.retry)
    abandoned = JobResult(ticket.digest, name, Outcome.ABANDONED, error=message)
    if retry and chain is not None and not fenced(lease, lambda: progress.save(chain.records)):
        return abandoned
    if not lease.end(
        lambda etag: (
            queue.end_attempt(ctx.store, job.claim, etag, end, ctx.retry, ctx.announce) is not None
        )
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
