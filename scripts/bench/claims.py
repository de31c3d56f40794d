"""Claim cost against queue length, and contention between 16 concurrent claimers."""

from __future__ import annotations

import hashlib
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import boto3
from common import moto_server, new_bucket, table
from moto import mock_aws
from moto.s3.models import s3_backends

from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.stores.s3 import S3Store
from bucketdigest.worker.claim import Claimer

CLAIMS = 30


def _ticket(index: int) -> tuple[str, bytes]:
    digest = hashlib.sha256(b"%d" % index).hexdigest()
    return digest, Ticket(digest, "pdf", 1, (f"doc-{index}.pdf",), datetime.now(UTC)).to_json()


def _fill_backend(bucket: str, count: int) -> None:
    """Write markers straight into moto's backend (its HTTP API would take minutes for 100,000)."""
    backend = s3_backends["123456789012"]["global"]
    for index in range(count):
        digest, body = _ticket(index)
        backend.put_object(bucket, "bench/" + keys.queue_key(QueueState.TODO, digest), body)


def _fill_local(store: LocalStore, count: int) -> None:
    folder = store.root / QueueState.TODO.prefix
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        digest, body = _ticket(index)
        (folder / digest).write_bytes(body)


def _measure(store: Store, claims: int) -> tuple[float, float]:
    counting = CountingStore(store)
    claimer = Claimer(counting, "bench", 600)
    started = time.perf_counter()
    for _ in range(claims):
        assert claimer.next().job is not None
    return (time.perf_counter() - started) / claims * 1000, counting.total / claims


def scale(quick: bool) -> str:
    sizes = (100, 1000) if quick else (1000, 10_000, 100_000)
    rows = []
    for size in sizes:
        with mock_aws():
            bucket = new_bucket(None)  # type: ignore[arg-type]
            _fill_backend(bucket, size)
            ms_s3, req_s3 = _measure(S3Store(bucket, "bench", client=boto3.client("s3")), CLAIMS)
        with tempfile.TemporaryDirectory() as scratch:
            local = LocalStore(Path(scratch))
            _fill_local(local, size)
            ms_local, req_local = _measure(local, CLAIMS)
        rows.append(
            (f"{size:,}", f"{req_s3:.2f}", f"{ms_s3:.1f}", f"{req_local:.2f}", f"{ms_local:.1f}")
        )
    header = (
        "todo markers",
        "S3 requests/claim",
        "moto ms/claim",
        "local requests/claim",
        "local ms/claim",
    )
    return table(header, rows)


def contention(quick: bool) -> str:
    markers, claimers = (100, 4) if quick else (1000, 16)
    with moto_server() as endpoint:
        bucket = new_bucket(endpoint)
        _fill_backend(bucket, markers)
        won, lost, stores = [0], [0], []
        lock = threading.Lock()

        def claimer_thread() -> None:
            store = CountingStore(S3Store(bucket, "bench", endpoint_url=endpoint))
            stores.append(store)
            claimer = Claimer(store, threading.current_thread().name, 600)
            while True:
                before = store.requests["PUT"]
                result = claimer.next()
                with lock:
                    if result.job is not None:
                        won[0] += 1
                        lost[0] += store.requests["PUT"] - before - 1
                    else:
                        lost[0] += store.requests["PUT"] - before
                if result.job is None:
                    return

        threads = [threading.Thread(target=claimer_thread, name=f"c{i}") for i in range(claimers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    attempts = won[0] + lost[0]
    rows = [
        (claimers, markers, won[0], f"{won[0] / seconds:.1f}", f"{lost[0] / max(attempts, 1):.1%}")
    ]
    return table(("claimers", "jobs", "claimed", "claims/s", "412 share of claim attempts"), rows)
