"""``--claims optimistic`` on a store that ignores conditional writes (moto behind a proxy that
drops If-None-Match and If-Match): refused without the flag; with it, four worker processes,
one killed mid-run, lose nothing, write only whole results, and process few documents twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
import zipfile
from collections import Counter
from pathlib import Path

import boto3
import pytest

from bucketdigest.monitor.sweep import MonitorSettings, lease_expired
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim, DigestRecords, OutputStatus
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from tests.faultproxy import FaultProxy
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]
DOCUMENTS = 16
OPTIMISTIC = ["--claims", "optimistic", "--claim-settle", "0.3"]
WORK = [
    "work",
    "--exit-when-idle",
    "--converter-mode",
    "legacy",
    "--lease-seconds",
    "6",
    "--monitor-every",
    "3",
    "--log-format",
    "json",
]


def _done_lines(log: str) -> list[str]:
    """The digests of the jobs a worker's JSON log says it finished."""
    done = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "): done," in str(entry.get("message", "")):
            done.append(entry["digest"])
    return done


def _held_by(store: Store, pid: int) -> str | None:
    """The document a worker process holds (its id carries its pid) and has not finished."""
    for digest, info in queue.markers(store, QueueState.PROCESSING):
        if store.head(keys.out_key(digest)) is not None:
            continue
        try:
            claim = Claim.from_json(store.get(info.key).data)
        except (NotFound, CorruptRecord):
            continue
        if f"-{pid}-" in claim.worker_id:
            return digest
    return None


def _claim_over(store: Store, digest: str) -> bool | None:
    """True once ``digest``'s claim has expired on the store's clock, or is gone."""
    try:
        marker = store.get(keys.queue_key(QueueState.PROCESSING, digest))
    except NotFound:
        return True
    info = store.head(keys.queue_key(QueueState.PROCESSING, digest))
    claim = Claim.from_json(marker.data)
    if info is None or lease_expired(claim, info, store.now(), MonitorSettings().stale_after):
        return True
    return None


@pytest.mark.slow
def test_four_workers_on_a_store_that_ignores_conditions_lose_nothing(
    moto_endpoint: str, tmp_path: Path
) -> None:
    name = f"bd-optimistic-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=name)
    folder = tmp_path / "in"
    for n in range(DOCUMENTS):
        make_pdf(folder / f"doc-{n:02d}.pdf", title=f"Document {n}", pages=2, seed=100 + n)
    with FaultProxy(moto_endpoint, rate=0, ignore_conditions=True) as proxy:
        target = ["--bucket", f"s3://{name}/data", "--endpoint-url", proxy.url]
        refused = subprocess.run([*CLI, "ingest", str(folder), *target], capture_output=True)
        assert refused.returncode != 0
        assert b"--claims optimistic" in refused.stderr
        ingest = [*CLI, "ingest", str(folder), *target, *OPTIMISTIC]
        subprocess.run(ingest, check=True, capture_output=True)
        store = open_store(StoreSettings(bucket=f"s3://{name}/data", endpoint_url=moto_endpoint))
        change_settings(store, {"converter_mode": "legacy", "lease_seconds": 6})  # the fleet's
        workers = [
            subprocess.Popen(
                [*CLI, *WORK, *target, *OPTIMISTIC],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        held = wait_until(lambda: _held_by(store, workers[0].pid), "worker 0 never held a job", 300)
        workers[0].send_signal(signal.SIGKILL)
        logs = []
        for worker in workers:
            _, errors = worker.communicate(timeout=600)
            logs.append(errors)
        # a last worker takes the killed worker's job over once its claim is over
        wait_until(lambda: _claim_over(store, held), "the killed worker's claim never ended", 300)
        last = subprocess.run(
            [*CLI, *WORK, *target, *OPTIMISTIC], capture_output=True, text=True, timeout=600
        )
        assert last.returncode == 0, last.stderr
        logs.append(last.stderr)
        digests = {info.key.rsplit("/", 1)[-1].split(".")[0] for info in store.list("store/raw/")}
    assert len(digests) == DOCUMENTS
    for digest in digests:  # every document whole in store/out/: none lost, none half-written
        data = store.get(keys.out_key(digest)).data
        with zipfile.ZipFile(__import__("io").BytesIO(data)) as archive:
            assert archive.testzip() is None
            records = DigestRecords.from_json(archive.read("digests.json"))
            assert records.digest == digest
            assert all(
                r.status in (OutputStatus.COMPLETED, OutputStatus.SKIPPED) for r in records.outputs
            )
            assert archive.read("document.md")
    finished = Counter(d for log in logs for d in _done_lines(log))
    with zipfile.ZipFile(__import__("io").BytesIO(store.get(keys.out_key(held)).data)) as archive:
        maker = json.loads(archive.read("info.json"))["provenance"]["worker_id"]
    assert f"-{workers[0].pid}-" not in maker, "the killed worker's job was taken over"
    duplicates = sum(n - 1 for n in finished.values())
    print(f"optimistic claims: {duplicates} duplicate(s) of {DOCUMENTS} documents")
    assert duplicates <= DOCUMENTS // 4, finished
