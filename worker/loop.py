"""The worker loop: claim, run, repeat; every way out is explicit and logged once."""

from __future__ import annotations

import functools
import logging
import os
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from bucketdigest.shared import keys
from bucketdigest.shared.attempts import LEASE_SECONDS, MAX_ATTEMPTS, RETRY_DELAY, RetryPolicy
from bucketdigest.shared.bucket_settings import (
    BucketSettings,
    Follows,
    SettingsWatch,
    get_path,
    set_paths,
    webhooks,
    worker_paths,
)
from bucketdigest.shared.config import MONITOR_SECONDS
from bucketdigest.shared.errors import AccessDenied
from bucketdigest.shared.events import Outbox, Webhooks
from bucketdigest.shared.logs import log_context
from bucketdigest.shared.queue import ClaimResult
from bucketdigest.shared.queue.choosing import LOW_FIRST, NORMAL_FIRST, Claimer
from bucketdigest.shared.records import WorkerNote
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.windows import Schedule
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters import preloads
from bucketdigest.worker.job import JobContext, JobResult, run_job
from bucketdigest.worker.metrics import WorkerMetrics
from bucketdigest.worker.sandbox import Sandbox, SandboxLimits

log = logging.getLogger(__name__)


class MonitorCall(Protocol):
    """A worker's monitor duty: returns how many jobs it changed. ``leaving``: the worker is
    about to exit for want of work, so duties that run on an interval run now. ``make_room``
    is called before a duty starts a process of its own (the indexer), so the worker gives up
    what it holds between jobs meanwhile (its digester child: the two at once passed 1 GiB).
    ``stopping`` is set when the worker is asked to stop: a long duty (a catch-up of the
    index) ends early then, so that Ctrl-C stops a worker within moments."""

    def __call__(
        self,
        leaving: bool = False,
        make_room: Callable[[], None] | None = None,
        stopping: threading.Event | None = None,
    ) -> int: ...


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker behaves; built once from CLI options."""

    lease_seconds: float = LEASE_SECONDS
    max_attempts: int = MAX_ATTEMPTS
    retry_delay: float = RETRY_DELAY
    """Backoff before attempt n+1 is ``retry_delay * 2**(n-1)`` seconds."""
    max_jobs: int | None = None
    exit_when_idle: bool = False
    idle_sleep: float = 5.0
    """Seconds between claim attempts while the queue is empty (:func:`idle_sleep_for`)."""
    grace_seconds: float = 60.0
    monitor_every: float | None = MONITOR_SECONDS
    checkpoint_after: float = 20.0
    """Save a job's progress once the digesters since the last save took this many seconds."""
    digest: DigestSettings = field(default_factory=DigestSettings)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    delete_source_when_done: bool = False
    """Delete each document's source once its result is written (storage costs)."""
    metrics_port: int | None = None
    """Serve Prometheus metrics on this port (see ``worker/metrics.py``)."""
    run_window: tuple[str, ...] = ()
    """When the worker may claim (``--run-window``; always, without windows). A job still
    running when its window closes gets ``grace_seconds``, then is handed back."""
    normal_lane_share: float = NORMAL_FIRST
    low_lane_share: float = LOW_FIRST
    """The shares of claims that look in a lower lane first (`shared/queue/choosing.py`)."""
    webhooks: Webhooks = field(default_factory=Webhooks)
    """Where events go when a document is done or fails for good (the bucket's ``events``)."""

    settings_version: int = 0
    """The version of the bucket's settings these follow (each result records it)."""
    chain_settings_version: int = 0
    """Its chain version: a result made at another is outdated (``reprocess --outdated``)."""

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(max_attempts=self.max_attempts, retry_delay=self.retry_delay)

    @functools.cached_property
    def schedule(self) -> Schedule:
        return Schedule.parse(self.run_window)

    def with_settings(self, chosen: dict[str, Any]) -> WorkerSettings:
        """These settings with the bucket settings of ``chosen`` (name → value) taken over
        them, each at the option its declaration names."""
        paths = worker_paths(Follows.QUEUE)
        queue = {paths[name]: value for name, value in chosen.items() if name in paths}
        return set_paths(replace(self, digest=self.digest.with_settings(chosen)), queue)

    def setting_values(self) -> dict[str, Any]:
        """The bucket settings these options amount to (name → value)."""
        queue = {n: get_path(self, path) for n, path in worker_paths(Follows.QUEUE).items()}
        return queue | self.digest.as_settings()

    def following(self, bucket: BucketSettings, hooks: Webhooks | None = None) -> WorkerSettings:
        """These settings with every one the bucket sets taken from the bucket (the API key
        of model servers stays this process's: ``--llm-key-env``), events going to ``hooks``."""
        followed = self.with_settings(bucket.chosen())
        return replace(
            followed,
            idle_sleep=min(self.idle_sleep, idle_sleep_for(followed.lease_seconds)),
            webhooks=hooks or Webhooks(),
            settings_version=bucket.version,
            chain_settings_version=bucket.chain_version,
        )


@dataclass(frozen=True)
class BrokerClaims:
    """Claims through a broker (``work --via``): the broker chooses, as a Claimer would."""

    claim_next: Callable[[str, float], ClaimResult]
    worker_id: str
    lease_seconds: float

    def next(self) -> ClaimResult:
        return self.claim_next(self.worker_id, self.lease_seconds)


def new_worker_id() -> str:
    """``host-pid-random``: unique per process, readable in markers."""
    return f"{socket.gethostname()}-{os.getpid()}-{random.getrandbits(24):06x}"


AWAKE_SECONDS = 30.0
"""After a job, how long a worker keeps looking for the next one often: documents sent one
after another (a conversion API's client, a watched folder) find it awake."""
AWAKE_SLEEP = 0.5
"""Seconds between claim attempts while awake (a listing of the todo lanes each)."""


def idle_wait(idle_sleep: float, since_last_job: float | None) -> float:
    """How long an idle worker waits before trying to claim again: ``AWAKE_SLEEP`` within
    ``AWAKE_SECONDS`` of its last job, else ``idle_sleep`` (which bounds both)."""
    if since_last_job is not None and since_last_job < AWAKE_SECONDS:
        return min(AWAKE_SLEEP, idle_sleep)
    return idle_sleep


def idle_sleep_for(lease_seconds: float) -> float:
    """How long an idle worker (or a run waiting on one) pauses: short enough to take over an
    expired lease within a quarter of its length, at most five seconds."""
    return min(5.0, lease_seconds / 4)


@dataclass
class WorkerSummary:
    """What a worker did before it stopped, and why it stopped."""

    worker_id: str
    exit_reason: str = ""
    outcomes: Counter[str] = field(default_factory=Counter)
    pages: int = 0


class Worker:
    """Claims and runs jobs from one store until an exit condition holds."""

    def __init__(
        self,
        store: Store,
        settings: WorkerSettings,
        *,
        worker_id: str | None = None,
        on_result: Callable[[JobResult], None] | None = None,
        monitor_duty: MonitorCall | None = None,
        may_leave: Callable[[], bool] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = CountingStore(store)
        self.metrics = WorkerMetrics(self.store)
        self.settings = settings
        self.started_with = settings
        """What the process was given; :attr:`settings` is that following the bucket's."""
        # a brokered store names the token its workers' ids start with
        self.worker_id = worker_id or getattr(store, "worker_prefix", "") + new_worker_id()
        self.on_result = on_result
        self.monitor_duty = monitor_duty
        self._sandbox = Sandbox(self.settings.limits, preload=preloads())
        self.may_leave = may_leave
        self.stop_requested = threading.Event()
        self._stop_at: float | None = None
        self._last_monitor = 0.0
        self._watch: SettingsWatch | None = None
        self._outbox = Outbox(self.store)
        self._last_settings_check = 0.0
        self.clock = clock
        self._window_closes: datetime | None = None
        self._last_job_end: float | None = None

    def request_stop(self) -> None:
        """Stop claiming; the current job gets ``grace_seconds`` to finish, then is handed back."""
        if self._stop_at is None:
            self._stop_at = time.monotonic()
        self.stop_requested.set()

    def _shutdown_reason(self) -> str | None:
        grace = self.settings.grace_seconds
        if self._stop_at is not None and time.monotonic() - self._stop_at > grace:
            return f"shutdown: not finished within the {grace:g} s grace"
        closes = self._window_closes
        if closes is not None and self.clock() > closes + timedelta(seconds=grace):
            return f"run window closed at {closes:%H:%M} (and the {grace:g} s grace passed)"
        return None

    def _wait_for_window(self) -> bool:
        """Outside every run window: leave a note in the bucket (``status`` shows it) and wait
        for the next window; False if told to stop meanwhile."""
        schedule = self.settings.schedule
        now = self.clock()
        if schedule.is_open(now):
            self._window_closes = schedule.closes_at(now)
            return True
        opens = schedule.next_open(now)
        log.info("outside the run window: waiting until %s", opens.isoformat())
        note = WorkerNote(self.worker_id, now, opens, tuple(str(w) for w in schedule.windows))
        key = keys.worker_key(self.worker_id)
        self.store.put(key, note.to_json())
        try:
            while not schedule.is_open(now := self.clock()):
                remaining = (schedule.next_open(now) - now).total_seconds()
                if self.stop_requested.wait(min(max(remaining, 0.05), self.settings.idle_sleep)):
                    return False
        finally:
            self.store.delete(key)
        self._window_closes = schedule.closes_at(now)
        log.info("run window open until %s", self._window_closes)
        return True

    def _run_monitor_duty(self, leaving: bool = False) -> int:
        every = self.settings.monitor_every
        if self.monitor_duty is None or every is None:
            return 0
        if not leaving and time.monotonic() - self._last_monitor < every:
            return 0
        self._last_monitor = time.monotonic()
        try:
            return self.monitor_duty(
                leaving=leaving, make_room=self._sandbox.close, stopping=self.stop_requested
            )
        except Exception:
            log.exception("monitor duty failed; the worker goes on")
            return 0

    def _follow_settings(self) -> bool:
        """Take the bucket's settings when they changed: checked (a HEAD) once per monitor
        cadence, between jobs, so a change reaches every worker within one cadence. Whether
        they changed."""
        every = self.settings.monitor_every or MONITOR_SECONDS
        if self._watch is None:
            self._watch = SettingsWatch(self.store)
            bucket = self._watch.current
        elif time.monotonic() - self._last_settings_check < every:
            return False
        elif (changed := self._watch.changed()) is None:
            self._last_settings_check = time.monotonic()
            return False
        else:
            bucket = changed
            log.info("the bucket's settings changed: following version %d", bucket.version)
        self._last_settings_check = time.monotonic()
        self.settings = self.started_with.following(bucket, webhooks(self.store, bucket))
        return True

    def _job_context(self) -> JobContext:
        return JobContext(
            store=self.store,
            sandbox=self._sandbox,
            digest=self.settings.digest,
            worker_id=self.worker_id,
            lease_seconds=self.settings.lease_seconds,
            retry=self.settings.retry,
            shutdown_reason=self._shutdown_reason,
            checkpoint_after=self.settings.checkpoint_after,
            settings_version=self.settings.settings_version,
            chain_settings_version=self.settings.chain_settings_version,
            on_digester=self.metrics.digester_ran,
            delete_source=self.settings.delete_source_when_done,
            webhooks=self.settings.webhooks,
            outbox=self._outbox,
        )

    def _claimer(self) -> Claimer | BrokerClaims:
        through_broker = getattr(self.store.inner, "claim_next", None)
        if through_broker is not None:  # a worker without bucket credentials
            return BrokerClaims(through_broker, self.worker_id, self.settings.lease_seconds)
        return Claimer(
            self.store,
            self.worker_id,
            self.settings.lease_seconds,
            normal_first=self.settings.normal_lane_share,
            low_first=self.settings.low_lane_share,
        )

    def run(self) -> WorkerSummary:
        """Work until stopped, out of jobs (with ``exit_when_idle``) or at ``max_jobs``,
        following the bucket's settings: as they are when it starts, then each change within
        one monitor cadence."""
        self._follow_settings()
        summary = WorkerSummary(self.worker_id)
        if self.settings.metrics_port is not None:
            self.metrics.serve(self.settings.metrics_port)
        with log_context(worker_id=self.worker_id):
            log.info("worker %s started on %s", self.worker_id, self.store.url)
            try:
                self._run_monitor_duty()
                summary.exit_reason = self._loop(summary)
            finally:
                self._sandbox.close()
                self._outbox.close()
            log.info(
                "worker %s exiting: %s (%s)",
                self.worker_id,
                summary.exit_reason,
                ", ".join(f"{n} {k}" for k, n in sorted(summary.outcomes.items())) or "no jobs",
            )
        return summary

    def _loop(self, summary: WorkerSummary) -> str:
        jobs = 0
        ctx, claimer = self._job_context(), self._claimer()
        while True:
            if self._follow_settings():
                ctx, claimer = self._job_context(), self._claimer()
            if self.stop_requested.is_set():
                return "stop requested"
            if self.settings.max_jobs is not None and jobs >= self.settings.max_jobs:
                return f"reached --max-jobs {self.settings.max_jobs}"
            if not self._wait_for_window():
                return "stop requested"

            # claim the next job, or wait, or leave when idle
            self._run_monitor_duty()
            try:
                found = claimer.next()
            except AccessDenied as exc:  # a revoked token, a missing grant: waiting cannot help
                log.error("cannot claim: %s", exc)
                return f"access denied: {exc}"
            except Exception:
                log.exception("could not claim a job; trying again later")
                self.stop_requested.wait(self.settings.idle_sleep)
                continue
            if found.job is None:
                leaving = self.may_leave is None or self.may_leave()
                if self.settings.exit_when_idle and not found.deferred and leaving:
                    if self._run_monitor_duty(leaving=True) == 0:
                        return "idle: no job left to claim"
                    continue
                since = (
                    None if self._last_job_end is None else time.monotonic() - self._last_job_end
                )
                wait = idle_wait(self.settings.idle_sleep, since) if leaving else 0.2
                self.stop_requested.wait(wait)
                continue

            # run it to its end; the digester child starts now if it has not (a worker that
            # finds no job never pays for loading the converter and its models)
            self._sandbox.start()
            jobs += 1
            job = found.job
            self.metrics.job_claimed()
            with log_context(digest=job.digest, attempt=job.claim.ticket.attempt):
                try:
                    result = run_job(job, ctx)
                except Exception:
                    self.metrics.job_ended(None)
                    log.exception(
                        "job %s broke off; its claim will expire and be requeued", job.digest
                    )
                    continue
                self.metrics.job_ended(result)
                log.info(
                    "%s (%s): %s, %d pages in %.1f s%s",
                    result.name,
                    result.digest,
                    result.outcome.value,
                    result.pages,
                    result.seconds,
                    f": {result.error.splitlines()[0]}" if result.error else "",
                )

            self._last_job_end = time.monotonic()
            summary.outcomes[result.outcome.value] += 1
            summary.pages += result.pages
            if self.on_result is not None:
                self.on_result(result)
