"""Checkpoints: a job killed after its expensive digesters resumes without redoing them, and a
small document costs no checkpoint at all."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import ObjectInfo
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.clocks import MovableClock
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]


class RecordingStore(CountingStore):
    """Counts requests and remembers every key written."""

    def __init__(self, inner: LocalStore) -> None:
        super().__init__(inner)
        self.written: list[str] = []
        self.listed: list[str] = []

    def put(self, key: str, data: bytes) -> str:
        self.written.append(key)
        return super().put(key, data)

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        self.written.append(key)
        return super().put_if_absent(key, data)

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        self.listed.append(prefix)
        return super().list(prefix, start_after, limit)


def kill_worker_when(bucket: Path, ready: Callable[[], bool], never: str) -> None:
    """Run ``bucketdigest work`` (legacy converter, a checkpoint whenever anything is new,
    1 s leases) and SIGKILL it as soon as ``ready()``; ``never`` says what did not happen."""
    fleet = {"converter_mode": "legacy", "lease_seconds": 1}
    change_settings(open_store(StoreSettings(bucket=str(bucket))), fleet)
    options = ["--checkpoint-after", "0"]
    worker = subprocess.Popen(
        [*CLI, "work", "--bucket", str(bucket), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def due() -> bool:
            assert worker.poll() is None, "the worker exited"
            return ready()

        wait_until(due, never, seconds=300, every=0.02)
        worker.send_signal(signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait()


def _settings(**changes: object) -> WorkerSettings:
    values: dict = dict(
        exit_when_idle=True,
        monitor_every=None,
        idle_sleep=0.1,
        digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
    )
    values.update(changes)
    return WorkerSettings(**values)


def _records(data: bytes) -> dict[str, dict]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        outputs = json.loads(archive.read("digests.json"))["outputs"]
    return {record["output"]: record for record in outputs}


def test_a_small_document_is_processed_without_writing_a_checkpoint(tmp_path: Path) -> None:
    store = RecordingStore(LocalStore(tmp_path / "bucket"))
    make_pdf(tmp_path / "in" / "one.pdf", title="One", pages=1, seed=1)
    Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    store.written.clear()
    store.requests.clear()
    assert Worker(store, _settings()).run().outcomes == {"done": 1}
    assert [k for k in store.written if k.startswith(keys.WORK_PREFIX)] == []
    # claim (list, get, put, delete), get source, put result, release: a document its ingest
    # stored and queued (untouched) has no result nor progress to look for
    assert store.requests["PUT"] == 2
    assert store.requests["DELETE"] == 1 + 1
    assert store.requests["HEAD"] == 0
    assert not [p for p in store.listed if p.startswith(keys.WORK_PREFIX)]
    assert store.requests["LIST"] >= 1, "the claim's listing went through the counting store"


@pytest.mark.slow
def test_a_worker_killed_after_the_markdown_resumes_without_converting_again(
    tmp_path: Path,
) -> None:
    bucket = tmp_path / "bucket"
    clock = MovableClock()
    store = LocalStore(bucket, clock=clock)
    make_pdf(tmp_path / "in" / "book.pdf", title="Book", pages=6, seed=4)
    report = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    digest = report.files[0].digest

    def saved_markdown() -> dict | None:
        """The markdown record of the first checkpoint that holds it completed."""
        for info in store.list(keys.work_prefix(digest)):
            record = _records(store.get(info.key).data)["markdown"]
            if record["status"] == "completed":
                return record
        return None

    kill_worker_when(bucket, lambda: saved_markdown() is not None, "no checkpoint was written")
    assert store.head(keys.out_key(digest)) is None, "finished before it could be killed"
    saved = saved_markdown()
    assert saved is not None

    clock.advance(3600)  # the killed worker's lease is over
    assert sweep(store, MonitorSettings()).requeued == [digest]
    summary = Worker(store, _settings()).run()

    assert summary.outcomes == {"done": 1}
    final = _records(store.get(keys.out_key(digest)).data)
    assert final["markdown"]["updated_at"] == saved["updated_at"]  # not made again
    assert final["markdown"]["attempts"] == 1
    assert {r["status"] for r in final.values()} == {"completed", "skipped"}
    assert final["web-page"]["status"] == "skipped"
    assert list(store.list(keys.WORK_PREFIX)) == []
