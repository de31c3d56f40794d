"""What the digest chain asks of the job running it (:class:`bucketdigest.worker.chain.ChainHooks`):
run a digester in the sandbox, stopping when the lease is lost or the worker shuts down, and
save the job's progress to the bucket when a checkpoint is due, every write fenced by the
lease."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from bucketdigest.shared.errors import DigestError, Interrupted
from bucketdigest.shared.records import DigestRecords, OutputRecord
from bucketdigest.worker.chain import run_digester
from bucketdigest.worker.checkpoint import Progress
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.isolation import call_isolating_pages
from bucketdigest.worker.job_context import JobContext, fenced
from bucketdigest.worker.lease import Lease


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
        return "lease lost" if self.lease.lost.is_set() else self.ctx.shutdown_reason()

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
