"""The main job on one machine: start local workers, ingest sources meanwhile, keep workers
running until every document ingested is done or dead-lettered, then index what is new."""

from __future__ import annotations

import functools
import logging
import queue as stdqueue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from pathlib import Path

from bucketdigest.ingestor.ingest import IngestReport, IngestSettings, ingest_sources
from bucketdigest.ingestor.watch import WatchSettings, check_folders, watch_folders
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.runner.wiring import MonitorDuty, OpenStore
from bucketdigest.search.indexer import (
    LEASE_SECONDS,
    IndexDuty,
    IndexReport,
    index_bucket,
    indexed_documents,
)
from bucketdigest.shared import keys, queue
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import WorkersDied
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.logs import LogSetup
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.job import JobResult
from bucketdigest.worker.loop import WorkerSettings, idle_sleep_for
from bucketdigest.worker.pool import ingest_event, result_queue, start_workers

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
FAILED_LAUNCHES = 3
"""Launches of the workers in a row that all exited in error having passed on no result,
after which a run stops: workers that die as they start (a script that starts a run without
``if __name__ == "__main__":`` around it, whose spawned workers run it again and again; an
install that cannot import) would otherwise be started again for ever."""


@dataclass
class RunOutcome:
    """Which of the run's documents ended done and which failed (name → reason)."""

    done: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    pages: int = 0


@dataclass(frozen=True)
class RunReport:
    """What ingest found, how the documents ended, where the results are, and what the
    final indexing did."""

    ingest: IngestReport
    outcome: RunOutcome
    results: str
    """A folder for the embedded store, else the ``store/out/`` URL."""
    index: IndexReport
    searchable: int = 0
    """Of the documents done, how many the index holds once the run is over (the workers
    index as they go, so the last indexing may add none)."""


def _settle(store: Store, pending: set[str], outcome: RunOutcome, names: dict[str, str]) -> None:
    """Move documents whose fate the bucket now shows out of ``pending``."""
    for digest in list(pending):
        if store.head(keys.out_key(digest)) is not None:
            outcome.done.add(digest)
            pending.discard(digest)
        elif (failure := queue.read_failure(store, digest)) is not None:
            outcome.failed[names.get(digest, digest)] = failure.error
            pending.discard(digest)


def _drain(
    processes: list[BaseProcess],
    results: Queue[JobResult],
    outcome: RunOutcome,
    on_result: Callable[[JobResult], None],
) -> list[int]:
    """Pass on every result until the worker processes have exited: the exit codes of a
    launch that failed (every worker exited in error and none passed on a result), else
    none."""
    passed = _pass_on(results, outcome, on_result, lambda: any(p.is_alive() for p in processes))
    for process in processes:
        process.join()
    codes = [process.exitcode or 0 for process in processes]
    return codes if passed == 0 and all(codes) else []


def _pass_on(
    results: Queue[JobResult],
    outcome: RunOutcome,
    on_result: Callable[[JobResult], None],
    going: Callable[[], bool],
) -> int:
    """Pass on results as they come while ``going()`` says so, then those already sent; how
    many."""
    passed = 0
    while going() or not results.empty():
        try:
            result = results.get(timeout=POLL_SECONDS)
        except stdqueue.Empty:
            continue
        outcome.pages += result.pages
        on_result(result)
        passed += 1
    return passed


def results_location(store: Store) -> str:
    """Where results are: a folder for the embedded store, else the ``store/out/`` URL."""
    if isinstance(store, LocalStore):
        return str(Path(store.root) / keys.OUT_PREFIX)
    return store.url + keys.OUT_PREFIX


def run_local(
    store_settings: StoreSettings,
    sources: Sequence[str],
    ingest: IngestSettings,
    workers: int,
    settings: WorkerSettings,
    *,
    on_ingested: Callable[[IngestReport], None] = lambda _: None,
    on_result: Callable[[JobResult], None] = lambda _: None,
) -> RunReport:
    """Start ``workers`` local worker processes, ingest ``sources`` meanwhile (the workers take
    documents as they are queued, and may only leave when idle once ingest is over), then keep
    workers running until every document ingested is done or dead-lettered; documents held by
    workers elsewhere are waited for."""
    open_store = OpenStore(store_settings)
    store = open_store()
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
        # the run indexes once its workers are gone, so they do not each index as they leave
        monitor_duty=MonitorDuty(monitor, IndexDuty(store_settings, when_leaving=False)),
        may_leave=ingested,
        # results reach the caller through on_result; workers only log errors
        log_setup=replace(LogSetup.current(), level=max(logging.getLogger().level, logging.ERROR)),
    )

    # start the workers, then ingest while they take what is queued
    processes = launch()
    try:
        report = ingest_sources(store, sources, ingest)
    except BaseException:
        for process in processes:
            process.terminate()  # SIGTERM: they hand back whatever they hold, then exit
        for process in processes:
            process.join()
        raise
    finally:
        ingested.set()

    # wait until every document ingested is done or failed, starting workers again while
    on_ingested(report)
    names = {f.digest: f.path for f in report.files}
    outcome = RunOutcome()
    pending = {f.digest for f in report.files if f.state is not DocState.DONE}
    outcome.done |= {f.digest for f in report.files if f.state is DocState.DONE}
    failures = [_drain(processes, results, outcome, on_result)]
    _settle(store, pending, outcome, names)
    while pending:
        if len(failures) >= FAILED_LAUNCHES and all(failures[-FAILED_LAUNCHES:]):
            raise WorkersDied(
                f"the local workers exited in error (exit codes {failures[-1]}) "
                f"{FAILED_LAUNCHES} times in a row without finishing a document; "
                f"{len(pending)} document(s) wait in the bucket. `bucketdigest work "
                "--exit-when-idle` shows why. A script that starts a run needs "
                '`if __name__ == "__main__":` around it: the workers are spawned and run '
                "the script's top level again."
            )
        sweep(store, monitor)
        todo = (QueueState.TODO,)
        if not any(store.head(k) for d in pending for k in queue.marker_keys(d, todo)):
            time.sleep(idle_sleep_for(settings.lease_seconds))
        processes = launch()
        failures.append(_drain(processes, results, outcome, on_result))
        _settle(store, pending, outcome, names)

    # what the workers' duty has not indexed yet becomes searchable now; the documents are
    # done whatever happens to the index, so a failure here is reported, not raised
    try:
        indexed = index_bucket(store, store_settings, wait=LEASE_SECONDS)
        searchable = len(outcome.done & indexed_documents(store, store_settings))
    except Exception as exc:
        log.exception("indexing after the run failed")
        indexed = IndexReport(busy=f"failed: {exc}; run `bucketdigest index` to retry")
        searchable = 0
    return RunReport(report, outcome, results_location(store), indexed, searchable)


def run_watching(
    store_settings: StoreSettings,
    folders: Sequence[Path],
    ingest: IngestSettings,
    workers: int,
    settings: WorkerSettings,
    watch: WatchSettings,
    stop: threading.Event,
    *,
    on_ingested: Callable[[IngestReport], None] = lambda _: None,
    on_result: Callable[[JobResult], None] = lambda _: None,
) -> RunOutcome:
    """Follow ``folders`` (:func:`~bucketdigest.ingestor.watch.watch_folders`) while
    ``workers`` local worker processes convert what is queued, until ``stop`` is set (or
    Ctrl-C); the workers then hand back what they hold and exit. Each ingest and each
    result is passed on as it comes."""
    check_folders(folders)
    open_store = OpenStore(store_settings)
    store = open_store()
    monitor = MonitorSettings(
        stale_after=max(settings.lease_seconds * 4, 600), max_attempts=settings.max_attempts
    )
    results: Queue[JobResult] = result_queue()
    processes = start_workers(
        workers,
        open_store,
        replace(settings, exit_when_idle=False),
        results=results,
        monitor_duty=MonitorDuty(monitor, IndexDuty(store_settings)),
        log_setup=replace(LogSetup.current(), level=max(logging.getLogger().level, logging.ERROR)),
    )
    local = getattr(store, "root", None)
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            watch_folders(
                store,
                folders,
                ingest,
                lambda _, report: on_ingested(report),
                stop,
                watch,
                ignored=[local] if isinstance(local, Path) else [],
            )
        except BaseException as exc:
            failed.append(exc)

    watcher = threading.Thread(target=follow, daemon=True)
    outcome = RunOutcome()
    watcher.start()
    try:
        _pass_on(results, outcome, on_result, lambda: watcher.is_alive() and not stop.is_set())
    finally:
        stop.set()
        watcher.join()
        for process in processes:
            process.terminate()  # SIGTERM: they hand back whatever they hold, then exit
        _drain(processes, results, outcome, on_result)
    if failed:
        raise failed[0]
    return outcome
