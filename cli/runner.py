"""The main job: ingest sources, then run local workers until every document is done or
failed, reporting progress. Wires the ingestor, the workers and the monitor together."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bucketdigest.cli.wiring import MonitorDuty, OpenStore
from bucketdigest.ingestor.ingest import IngestReport
from bucketdigest.monitor.status import read_failure
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.store import Store
from bucketdigest.worker.job import JobResult, Outcome
from bucketdigest.worker.loop import WorkerSettings
from bucketdigest.worker.pool import result_queue, start_workers

POLL_SECONDS = 0.5


@dataclass
class RunOutcome:
    """Which of the run's documents ended done and which failed (name → reason)."""

    done: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    pages: int = 0


def _settle(store: Store, pending: set[str], outcome: RunOutcome, names: dict[str, str]) -> None:
    """Move documents whose fate the bucket now shows out of ``pending``."""
    for digest in list(pending):
        if store.head(keys.out_key(digest)) is not None:
            outcome.done.add(digest)
            pending.discard(digest)
        elif (failure := read_failure(store, digest)) is not None:
            outcome.failed[names.get(digest, digest)] = failure.error
            pending.discard(digest)


def run_to_completion(
    store: Store,
    open_store: OpenStore,
    report: IngestReport,
    workers: int,
    settings: WorkerSettings,
    on_result: Callable[[JobResult], None],
) -> RunOutcome:
    """Run ``workers`` local worker processes until every document of ``report`` is done or
    dead-lettered; documents held by workers elsewhere are waited for."""
    names = {f.digest: f.path for f in report.files}
    outcome = RunOutcome()
    pending = {f.digest for f in report.files if f.state != "done"}
    outcome.done |= {f.digest for f in report.files if f.state == "done"}
    monitor = MonitorSettings(
        stale_after=max(settings.lease_seconds * 4, 600), max_attempts=settings.max_attempts
    )
    settings = replace(settings, exit_when_idle=True)
    while pending:
        results = result_queue()
        processes = start_workers(
            workers, open_store, settings, results=results, monitor_duty=MonitorDuty(monitor)
        )
        while any(p.is_alive() for p in processes) or not results.empty():
            try:
                result: JobResult = results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            outcome.pages += result.pages
            on_result(result)
        for process in processes:
            process.join()
        _settle(store, pending, outcome, names)
        if pending:
            sweep(store, monitor)
            if not any(store.head(keys.queue_key(QueueState.TODO, d)) for d in pending):
                time.sleep(min(5.0, settings.lease_seconds / 4))
    return outcome


def counts_toward_progress(result: JobResult) -> bool:
    """Whether a result ends a document (a retry or a hand-back does not)."""
    return result.outcome in (Outcome.DONE, Outcome.ALREADY_DONE, Outcome.FAILED)


def local_results_path(store: Store) -> Path | None:
    """Where results are on disk for the embedded store, else None."""
    root = getattr(store, "root", None)
    return Path(root) / keys.OUT_PREFIX if root is not None else None
