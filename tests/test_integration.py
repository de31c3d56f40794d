"""The whole system against moto's real HTTP server, with real worker OS processes."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys, queue
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.samples import make_samples
from bucketdigest.shared.store import Store

CLI = [sys.executable, "-m", "bucketdigest"]


def _cli(*args: str) -> list[str]:
    return [*CLI, *args]


@pytest.mark.slow
def test_three_worker_processes_convert_twenty_pdfs_each_exactly_once(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    pdfs = make_samples(tmp_path / "pdfs", 20, pages=2)
    common = ["--bucket", moto_bucket, "--endpoint-url", moto_endpoint]
    ingest = subprocess.run(
        _cli("ingest", str(tmp_path / "pdfs"), *common, "--json"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(ingest.stdout)["run"]["queued"] == 20
    configured = subprocess.run(_cli("config", "set", "converter_mode", "legacy", *common))
    assert configured.returncode == 0
    workers = [
        subprocess.Popen(
            _cli("work", *common, "--exit-when-idle"),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
    store = open_store(StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint))
    expected = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in pdfs}
    outputs = [keys.parse_out_key(info.key) for info in store.list(keys.OUT_PREFIX)]
    assert sorted(outputs) == sorted(expected)
    assert list(store.list(keys.QUEUE_PREFIX)) == []
    for digest, pdf in expected.items():
        archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
        number = int(pdf.stem.split("-")[1])
        assert f"Rulebook {number}" in archive.read("document.md").decode()
    status = subprocess.run(
        _cli("status", *common, "--json"), capture_output=True, text=True, check=True
    )
    assert json.loads(status.stdout)["counts"] == {
        "todo": 0,
        "processing": 0,
        "failed": 0,
        "done": 20,
    }


def _race(
    store: Store, digest: str, name: str, barrier: threading.Barrier, winners: list[str]
) -> None:
    barrier.wait()
    if queue.claim(store, digest, name, 60).job is not None:
        winners.append(name)


@pytest.mark.slow
@pytest.mark.usefixtures("atomic_moto_puts")
def test_many_workers_racing_for_one_job_yield_exactly_one_owner(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    pdfs = make_samples(tmp_path / "pdfs", 10, pages=1)
    Ingestor(open_store(settings)).ingest([FolderSource(tmp_path / "pdfs", FileFilter())])
    racers = 8
    for pdf in pdfs:
        digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
        stores = [open_store(settings, self_test=False) for _ in range(racers)]
        barrier = threading.Barrier(racers)
        winners: list[str] = []

        threads = [
            threading.Thread(target=_race, args=(stores[i], digest, f"racer-{i}", barrier, winners))
            for i in range(racers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(winners) == 1, winners
        store = stores[0]
        assert store.head(keys.queue_key(QueueState.TODO, digest)) is None
        assert winners[0] in store.get(keys.queue_key(QueueState.PROCESSING, digest)).data.decode()
