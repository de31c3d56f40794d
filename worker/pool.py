"""Several worker processes on one machine, reporting results to the parent through a queue."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from typing import Any

from bucketdigest.shared.lifeline import deaf_to_ctrl_c, hear_ctrl_c
from bucketdigest.shared.logs import LogSetup
from bucketdigest.shared.store import Store
from bucketdigest.worker.loop import MonitorCall, Worker, WorkerSettings, WorkerSummary
from bucketdigest.worker.model_threads import share_of_cores

log = logging.getLogger(__name__)

StoreFactory = Callable[[], Store]
MonitorFactory = Callable[[Store], MonitorCall]


def _worker_main(
    open_store: StoreFactory,
    settings: WorkerSettings,
    results: Queue | None,
    monitor_duty: MonitorFactory | None,
    may_leave: EventType | None,
    log_setup: LogSetup,
) -> None:
    log_setup.apply()
    store = open_store()
    worker = Worker(
        store,
        settings,
        on_result=results.put if results is not None else None,
        monitor_duty=monitor_duty(store) if monitor_duty is not None else None,
        may_leave=may_leave.is_set if may_leave is not None else None,
    )
    run_until_signalled(worker)


def sharing_cores(settings: WorkerSettings, count: int) -> WorkerSettings:
    """``settings`` for one of ``count`` workers on this machine: unless they name a thread
    count for the models, each worker's gets an equal share of the cores (a lone worker's,
    onnxruntime's choice: a thread per physical core)."""
    if settings.limits.model_threads is not None or count == 1:
        return settings
    limits = replace(settings.limits, model_threads=share_of_cores(count))
    return replace(settings, limits=limits)


def run_until_signalled(worker: Worker) -> WorkerSummary:
    """Run ``worker`` in this process; SIGTERM and SIGINT ask it to stop (see ``--grace``)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: worker.request_stop())
    hear_ctrl_c()  # a worker process started deaf to it (start_workers)
    return worker.run()


def run_workers(
    count: int,
    open_store: StoreFactory,
    settings: WorkerSettings,
    *,
    monitor_duty: MonitorFactory | None = None,
) -> list[WorkerSummary]:
    """Run ``count`` workers until they stop: one in this process (its summary is returned),
    or several processes, to which this process passes on SIGTERM and SIGINT."""
    if count == 1:
        store = open_store()
        duty = monitor_duty(store) if monitor_duty is not None else None
        return [run_until_signalled(Worker(store, settings, monitor_duty=duty))]
    processes: list[BaseProcess] = []
    received: list[int] = []

    def pass_on(signum: int, _: object) -> None:
        received.append(signum)
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signum)

    # set before they start, so that a Ctrl-C meanwhile is not click's "Aborted!": it reaches
    # those started, and those started after it once all are (asking twice is harmless)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, pass_on)
    processes += start_workers(count, open_store, settings, monitor_duty=monitor_duty)
    if received:
        pass_on(received[0], None)
    for process in processes:
        process.join()
    return []


def start_workers(
    count: int,
    open_store: StoreFactory,
    settings: WorkerSettings,
    *,
    results: Queue | None = None,
    monitor_duty: MonitorFactory | None = None,
    may_leave: EventType | None = None,
    log_setup: LogSetup | None = None,
) -> list[BaseProcess]:
    """Start ``count`` worker processes (spawned: nothing inherited but the arguments, which
    must be picklable); with a metrics port N, worker i serves on N + i - 1. With
    ``may_leave``, idle workers exit only once it is set. They log as ``log_setup`` says
    (default: as this process does)."""
    context = multiprocessing.get_context("spawn")
    settings = sharing_cores(settings, count)
    processes = []
    for index in range(count):
        port = settings.metrics_port
        process = context.Process(
            target=_worker_main,
            args=(
                open_store,
                settings if port is None else replace(settings, metrics_port=port + index),
                results,
                monitor_duty,
                may_leave,
                log_setup or LogSetup.current(),
            ),
            name=f"worker-{index + 1}",
        )
        with deaf_to_ctrl_c():  # until its handler is set (run_until_signalled)
            process.start()
        processes.append(process)
    return processes


def ingest_event() -> EventType:
    """An event worker processes can wait for (set when ingest is over)."""
    return multiprocessing.get_context("spawn").Event()


def result_queue() -> Queue[Any]:
    """A queue worker processes can put JobResults on."""
    return multiprocessing.get_context("spawn").Queue()
