"""Prometheus metrics scraped from a real worker process during a job on moto's server, and
the queue gauges of ``monitor`` and ``serve``."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim
from bucketdigest.shared.samples import make_pdf
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _samples(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return _samples(response.read().decode())


def _wait_for(port: int, holds: Callable[[Samples], bool], timeout: float = 120) -> Samples:
    def held() -> Samples:
        try:
            seen = _scrape(port)
        except OSError:
            return {}
        return seen if seen and holds(seen) else {}

    return wait_until(held, "the metrics never got there", seconds=timeout, every=0.3)


def _steal(store_settings: StoreSettings, digest: str) -> None:
    """Another owner takes the claim, as a monitor or a second worker would."""
    store = open_store(store_settings, self_test=False)
    key = keys.queue_key(QueueState.PROCESSING, digest)
    claim = Claim.from_json(store.get(key).data)
    now = store.now()
    thief = Claim(
        ticket=claim.ticket,
        worker_id="thief",
        token="stolen",
        claimed_at=now,
        heartbeat_at=now,
        lease_until=now + timedelta(hours=1),
    )
    store.put(key, thief.to_json())


@pytest.mark.slow
def test_a_running_worker_counts_its_job_requests_and_a_lost_lease(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    pdf = make_pdf(tmp_path / "pdfs" / "long.pdf", title="Long rules", pages=60, seed=4)
    change_settings(open_store(settings), {"lease_seconds": 4})
    ingest_sources(open_store(settings), [str(pdf.parent)], IngestSettings())
    digest = next(d for d, _ in queue.markers(open_store(settings), QueueState.TODO))
    port = _free_port()
    worker = subprocess.Popen(
        [
            *CLI,
            "work",
            "--bucket",
            moto_bucket,
            "--endpoint-url",
            moto_endpoint,
            "--metrics-port",
            str(port),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        during = _wait_for(port, lambda s: s[("bucketdigest_job_age_seconds", ())] > 0)
        assert during[("bucketdigest_jobs_claimed_total", ())] == 1
        assert during[("bucketdigest_store_requests_total", (("kind", "GET"),))] >= 1
        assert during[("bucketdigest_store_requests_total", (("kind", "PUT"),))] >= 1
        assert during[("bucketdigest_lease_losses_total", ())] == 0
        _steal(settings, digest)
        after = _wait_for(port, lambda s: s[("bucketdigest_lease_losses_total", ())] == 1)
        assert after[("bucketdigest_jobs_total", (("outcome", "abandoned"),))] == 1
        assert after[("bucketdigest_jobs_total", (("outcome", "done"),))] == 0
        assert after[("bucketdigest_job_age_seconds", ())] == 0
        ran = [
            value
            for (name, _), value in after.items()
            if name == "bucketdigest_digester_seconds_count"
        ]
        assert sum(ran) >= 1
    finally:
        worker.terminate()
        worker.wait(timeout=60)


def test_monitor_and_serve_export_the_queue_gauges(tmp_path: Path, pdf_folder: Path) -> None:
    bucket = tmp_path / "bucket"
    settings = StoreSettings(bucket=str(bucket))
    ingest_sources(open_store(settings), [str(pdf_folder)], IngestSettings())
    port = _free_port()
    monitor = subprocess.Popen(
        [*CLI, "monitor", "--bucket", str(bucket), "--metrics-port", str(port)],
        stderr=subprocess.DEVNULL,
    )
    try:
        gauges = _wait_for(port, lambda s: ("bucketdigest_documents", (("state", "todo"),)) in s)
    finally:
        monitor.terminate()
        monitor.wait(timeout=30)
    assert gauges[("bucketdigest_documents", (("state", "todo"),))] == 3
    assert gauges[("bucketdigest_documents", (("state", "done"),))] == 0
    assert gauges[("bucketdigest_oldest_todo_seconds", ())] >= 0
    with TestClient(
        create_app(ServeSettings(store=settings, allowed_hosts=("testserver",)))
    ) as client:
        served = _samples(client.get("/metrics").text)
    assert served[("bucketdigest_documents", (("state", "todo"),))] == 3
    assert served[("bucketdigest_documents", (("state", "processing"),))] == 0
