"""The main job: ingest sources, then run local workers until every document is done or
failed, reporting progress. Wires the ingestor, the workers and the monitor together."""

from __future__ import annotations

import functools
import logging
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
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
from bucketdigest.worker.pool import ingest_event, result_queue, start_workers

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


def _drain(
    processes: list[BaseProcess],
    results: Queue[JobResult],
    outcome: RunOutcome,
    on_result: Callable[[JobResult], None],
) -> None:
    """Pass on every result until the worker processes have exited."""
    while any(p.is_alive() for p in processes) or not results.empty():
        try:
            result = results.get(timeout=POLL_SECONDS)
        except queue.Empty:
            continue
        outcome.pages += result.pages
        on_result(result)
    for process in processes:
        process.join()


def run_to_completion(
    store: Store,
    open_store: OpenStore,
    ingest: Callable[[], IngestReport],
    workers: int,
    settings: WorkerSettings,
    on_ingested: Callable[[IngestReport], None],
    on_result: Callable[[JobResult], None],
) -> tuple[IngestReport, RunOutcome]:
    """Start ``workers`` local worker processes, ingest meanwhile (the workers take documents as
    they are queued, and may only leave when idle once ingest is over), then keep workers
    running until every document ingested is done or dead-lettered; documents held by workers
    elsewhere are waited for."""
    monitor = MonitorSettings(
        stale_after=max(settings.lease_seconds * 4, 600), max_attempts=settings.max_attempts
    )
    settings = replace(settings, exit_when_idle=True)
    results: Queue[JobResult] = result_queue()
    ingested = ingest_event()
    launch = functools.partial(
        start_workers,
        workers,
        open_store,
        settings,
        results=results,
        monitor_duty=MonitorDuty(monitor),
        may_leave=ingested,
        # results are reported here, through the progress display; workers only log errors
        log_level=max(logging.getLogger().level, logging.ERROR),
    )
    processes = launch()
    try:
        report = ingest()
    except BaseException:
        for process in processes:
            process.terminate()  # SIGTERM: they hand back whatever they hold, then exit
        for process in processes:
            process.join()
        raise
    finally:
        ingested.set()
    on_ingested(report)
    names = {f.digest: f.path for f in report.files}
    outcome = RunOutcome()
    pending = {f.digest for f in report.files if f.state != "done"}
    outcome.done |= {f.digest for f in report.files if f.state == "done"}
    _drain(processes, results, outcome, on_result)
    _settle(store, pending, outcome, names)
    while pending:
        sweep(store, monitor)
        if not any(store.head(keys.queue_key(QueueState.TODO, d)) for d in pending):
            time.sleep(min(5.0, settings.lease_seconds / 4))
        processes = launch()
        _drain(processes, results, outcome, on_result)
        _settle(store, pending, outcome, names)
    return report, outcome


def counts_toward_progress(result: JobResult) -> bool:
    """Whether a result ends a document (a retry or a hand-back does not)."""
    return result.outcome in (Outcome.DONE, Outcome.ALREADY_DONE, Outcome.FAILED)


def local_results_path(store: Store) -> Path | None:
    """Where results are on disk for the embedded store, else None."""
    root = getattr(store, "root", None)
    return Path(root) / keys.OUT_PREFIX if root is not None else None
