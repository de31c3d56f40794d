"""Queue gauges for autoscalers (``monitor --metrics-port N`` and ``serve``'s ``/metrics``):
documents per state and the age of the oldest todo marker. Read from the bucket when
scraped, at most once per ``max_age`` seconds (the ``done`` count lists ``store/out/``:
1,000 keys a request), whatever the number of scrapers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bucketdigest.shared import keys, queue
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class QueueDepths:
    """Documents per state, and how long the oldest todo marker has waited (0: none)."""

    counts: dict[DocState, int]
    oldest_todo_seconds: float


def queue_depths(store: Store) -> QueueDepths:
    """Count the markers of each queue state and the results."""
    now = store.now()
    counts = dict.fromkeys(DocState, 0)
    oldest = 0.0
    for state in QueueState:
        for _, info in queue.markers(store, state):
            counts[DocState.of(state)] += 1
            if state is QueueState.TODO:
                oldest = max(oldest, (now - info.last_modified).total_seconds())
    counts[DocState.DONE] = sum(1 for _ in store.list(keys.OUT_PREFIX))
    return QueueDepths(counts, oldest)


class QueueGauges(Collector):
    """``bucketdigest_documents{state}`` and ``bucketdigest_oldest_todo_seconds``."""

    def __init__(self, store: Store, max_age: float = 30.0) -> None:
        self.store = store
        self.max_age = max_age
        self._lock = threading.Lock()
        self._read: tuple[float, QueueDepths] | None = None

    def depths(self) -> QueueDepths:
        with self._lock:
            if self._read is None or time.monotonic() - self._read[0] > self.max_age:
                self._read = (time.monotonic(), queue_depths(self.store))
            return self._read[1]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depths = self.depths()
        documents = GaugeMetricFamily(
            "bucketdigest_documents", "Documents per state in the bucket.", labels=["state"]
        )
        for state, count in depths.counts.items():
            documents.add_metric([state.value], count)
        yield documents
        yield GaugeMetricFamily(
            "bucketdigest_oldest_todo_seconds",
            "Seconds the oldest queued document has waited (0: the queue is empty).",
            value=depths.oldest_todo_seconds,
        )


def serve_queue_gauges(store: Store, port: int, addr: str = "0.0.0.0") -> None:
    """Serve the queue gauges on ``port`` from a daemon thread for the life of the process."""
    registry = CollectorRegistry()
    registry.register(QueueGauges(store))
    start_http_server(port, addr, registry=registry)
