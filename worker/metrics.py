"""A worker's Prometheus metrics (``work --metrics-port N``): jobs claimed and how they
ended, lease losses, seconds per digester, pages, store requests and retries by kind, and
the age of the job in hand. Each worker process serves its own registry (worker ``i`` of
``--workers K`` on port ``N + i - 1``), so nothing is shared between processes."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.worker.job import JobResult, Outcome

DIGESTER_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class StoreRequests(Collector):
    """Requests and retries by kind (GET, PUT, LIST, ...), read from the store at scrape
    time: the counting wrapper counts requests, the S3 backend its retries."""

    def __init__(self, store: CountingStore) -> None:
        self.store = store

    def collect(self) -> Iterator[CounterMetricFamily]:
        requests = CounterMetricFamily(
            "bucketdigest_store_requests", "Store requests by kind.", labels=["kind"]
        )
        for kind, count in sorted(self.store.requests.items()):
            requests.add_metric([kind], count)
        retries = CounterMetricFamily(
            "bucketdigest_store_retries", "Store requests retried, by kind.", labels=["kind"]
        )
        for kind, count in sorted(getattr(self.store.inner, "retries", {}).items()):
            retries.add_metric([kind], count)
        yield requests
        yield retries


class WorkerMetrics:
    """The metrics of one worker process, in a registry of its own."""

    def __init__(self, store: CountingStore) -> None:
        self.registry = CollectorRegistry()
        self.claimed = Counter("bucketdigest_jobs_claimed", "Jobs claimed.", registry=self.registry)
        self.jobs = Counter(
            "bucketdigest_jobs",
            "Jobs ended, by outcome (done, already-done, retrying, failed, abandoned, "
            "handed-back).",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in Outcome:
            self.jobs.labels(outcome.value)
        self.lease_losses = Counter(
            "bucketdigest_lease_losses",
            "Jobs given up because another worker or the monitor took the claim.",
            registry=self.registry,
        )
        self.pages = Counter("bucketdigest_pages", "Pages converted.", registry=self.registry)
        self.digester_seconds = Histogram(
            "bucketdigest_digester_seconds",
            "Seconds each digester ran (including failed and interrupted runs).",
            ["digester"],
            buckets=DIGESTER_BUCKETS,
            registry=self.registry,
        )
        self._job_started: float | None = None
        job_age = Gauge(
            "bucketdigest_job_age_seconds",
            "Seconds since the job in hand was claimed (0 when idle).",
            registry=self.registry,
        )
        job_age.set_function(self._job_age)
        self.registry.register(StoreRequests(store))

    def _job_age(self) -> float:
        started = self._job_started
        return 0.0 if started is None else time.monotonic() - started

    def job_claimed(self) -> None:
        self.claimed.inc()
        self._job_started = time.monotonic()

    def job_ended(self, result: JobResult | None) -> None:
        """``result`` None: the job broke off with an error of the worker's own."""
        self._job_started = None
        if result is None:
            return
        self.jobs.labels(result.outcome.value).inc()
        self.pages.inc(result.pages)
        if result.outcome is Outcome.ABANDONED:
            self.lease_losses.inc()

    def digester_ran(self, name: str, seconds: float) -> None:
        self.digester_seconds.labels(name).observe(seconds)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on ``port`` from a daemon thread for the life of the process."""
        start_http_server(port, addr, registry=self.registry)
