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
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.queue.choosing import Claimer
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.stores.s3 import S3Store

CLAIMS = 30


MIX = {Priority.HIGH: 0.01, Priority.NORMAL: 0.89, Priority.LOW: 0.10}
"""The mixed-priority row: lanes' shares of the queued documents."""


def _ticket(index: int, priority: Priority = Priority.NORMAL) -> tuple[str, bytes]:
    digest = hashlib.sha256(b"%d" % index).hexdigest()
    ticket = Ticket(digest, "pdf", 1, (f"doc-{index}.pdf",), datetime.now(UTC), priority=priority)
    return digest, ticket.to_json()


def _lanes(count: int, mixed: bool) -> list[Priority]:
    if not mixed:
        return [Priority.NORMAL] * count
    return [lane for lane, share in MIX.items() for _ in range(int(count * share))]


def _fill_backend(bucket: str, count: int, mixed: bool = False) -> None:
    """Write markers straight into moto's backend (its HTTP API would take minutes for 100,000)."""
    backend = s3_backends["123456789012"]["global"]
    for index, lane in enumerate(_lanes(count, mixed)):
        digest, body = _ticket(index, lane)
        key = keys.queue_key(QueueState.TODO, digest, lane)
        backend.put_object(bucket, "bench/" + key, body)


def _fill_local(store: LocalStore, count: int, mixed: bool = False) -> None:
    for index, lane in enumerate(_lanes(count, mixed)):
        digest, body = _ticket(index, lane)
        path = store.root / keys.queue_key(QueueState.TODO, digest, lane)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def _measure(store: Store, claims: int) -> tuple[float, float, float]:
    """ms and requests per claim, and the share of claims that took a high-priority job."""
    counting = CountingStore(store)
    claimer = Claimer(counting, "bench", 600)
    started = time.perf_counter()
    high = 0
    for _ in range(claims):
        job = claimer.next().job
        assert job is not None
        high += job.claim.ticket.priority is Priority.HIGH
    seconds = time.perf_counter() - started
    return seconds / claims * 1000, counting.total / claims, high / claims


def scale(quick: bool) -> str:
    sizes = (100, 1000) if quick else (1000, 10_000, 100_000)
    rows = []
    for size, mixed in [*((n, False) for n in sizes), (sizes[-1], True)]:
        with mock_aws():
            bucket = new_bucket(None)  # type: ignore[arg-type]
            _fill_backend(bucket, size, mixed)
            s3 = _measure(S3Store(bucket, "bench", client=boto3.client("s3")), CLAIMS)
        with tempfile.TemporaryDirectory() as scratch:
            local = LocalStore(Path(scratch))
            _fill_local(local, size, mixed)
            on_disk = _measure(local, CLAIMS)
        rows.append(
            (
                f"{size:,}" + (" (1% high, 89% normal, 10% low)" if mixed else ""),
                f"{s3[1]:.2f}",
                f"{s3[0]:.1f}",
                f"{on_disk[1]:.2f}",
                f"{on_disk[0]:.1f}",
                f"{s3[2]:.0%}" if mixed else "-",
            )
        )
    header = (
        "todo markers",
        "S3 requests/claim",
        "moto ms/claim",
        "local requests/claim",
        "local ms/claim",
        "claims taking high (moto)",
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
