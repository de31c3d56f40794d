"""Crashes, pauses, shutdowns and store faults, with real worker OS processes: nothing is lost,
nothing is done twice in a way anyone can see, and a zombie never touches a new owner's work."""

from __future__ import annotations

import hashlib
import io
import json
import random
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.sweep import lease_expired
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim, Ticket
from bucketdigest.shared.samples import make_pdf, make_samples
from bucketdigest.shared.store import Store
from tests.faultproxy import FaultProxy
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "bucketdigest"]
LAYOUT = (
    keys.RAW_PREFIX,
    keys.OUT_PREFIX,
    keys.REGISTRY_DOCS_PREFIX,
    keys.REGISTRY_RUNS_PREFIX,
    keys.REGISTRY_SOURCES_PREFIX,
    keys.MONITOR_PREFIX,
    keys.INDEX_PREFIX,
    keys.INDEX_WRITER_KEY,
    keys.SETTINGS_KEY,
)


def _work(bucket: str, endpoint: str | None, *options: str) -> subprocess.Popen[str]:
    target = ["--bucket", bucket, *(["--endpoint-url", endpoint] if endpoint else [])]
    command = [*CLI, "work", *target, *options]
    return subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _wait_for(condition: Callable[[], object], timeout: float = 60.0) -> None:
    wait_until(condition, "timed out waiting", seconds=timeout, every=0.1)


def _began_since(
    before: set[str], claimed: Callable[[], set[str]], over: Callable[[], bool]
) -> Callable[[], bool]:
    """A condition: a job has been claimed that was not among ``before``, or all are over."""
    return lambda: bool(claimed() - before) or over()


def _claim_expired(store: Store, key: str) -> bool:
    """Whether the claim at ``key`` has expired, judged as the monitor judges it."""
    info = store.head(key)
    claim = Claim.from_json(store.get(key).data)
    return info is not None and lease_expired(claim, info, store.now(), 7200)


def _ingest(store: Store, folder: Path, **fleet: object) -> dict[str, Path]:
    """Set the fleet's settings (the legacy converter, and ``fleet``), then queue ``folder``."""
    change_settings(store, {"converter_mode": "legacy", **fleet})
    Ingestor(store).ingest([FolderSource(folder, FileFilter())])
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in folder.glob("*.pdf")}


def _assert_all_settled(store: Store, expected: set[str]) -> None:
    done = {keys.parse_out_key(i.key) for i in store.list(keys.OUT_PREFIX)}
    failed = {keys.parse_queue_key(i.key)[1] for i in store.list(QueueState.FAILED.prefix)}
    assert done | failed == expected
    assert not done & failed
    assert [i.key for i in store.list(QueueState.TODO.prefix)] == []
    assert [i.key for i in store.list(QueueState.PROCESSING.prefix)] == []
    strays = [i.key for i in store.list("") if not i.key.startswith(LAYOUT)]
    assert all(k.startswith(keys.SELFTEST_PREFIX) for k in strays), strays


def test_faults_in_a_tenth_of_store_requests_lose_nothing(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    make_samples(tmp_path / "pdfs", 12, pages=1)
    with FaultProxy(moto_endpoint, rate=0.10, seed=7) as proxy:
        store = open_store(StoreSettings(bucket=moto_bucket, endpoint_url=proxy.url))
        expected = _ingest(store, tmp_path / "pdfs")
        workers = [
            _work(moto_bucket, proxy.url, "--exit-when-idle", "--monitor-every", "2")
            for _ in range(2)
        ]
        for worker in workers:
            _, err = worker.communicate(timeout=600)
            assert worker.returncode == 0, err
        assert sum(proxy.injected.values()) >= 10, proxy.injected
    clean = open_store(StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint))
    _assert_all_settled(clean, set(expected))
    assert not list(clean.list(QueueState.FAILED.prefix))


def test_chaos_killing_workers_at_random_loses_nothing(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    make_samples(tmp_path / "pdfs", 40, pages=2)
    store = open_store(StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint))
    expected = set(_ingest(store, tmp_path / "pdfs", lease_seconds=3, max_attempts=10))
    options = ("--monitor-every", "1")
    rng = random.Random(3)
    workers = [_work(moto_bucket, moto_endpoint, *options) for _ in range(4)]
    kills = 0

    def ended() -> int:
        return sum(1 for _ in store.list(keys.OUT_PREFIX)) + sum(
            1 for _ in store.list(QueueState.FAILED.prefix)
        )

    def claimed() -> set[str]:
        return {info.key for info in store.list(QueueState.PROCESSING.prefix)}

    try:
        while kills < 8 and ended() < 40:
            # a worker is killed at random once a job has begun since the last kill: mid-job
            began = _began_since(claimed(), claimed, lambda: ended() >= 40)
            wait_until(began, "no job began", 120, every=0.2)
            victim = rng.randrange(len(workers))
            workers[victim].send_signal(signal.SIGKILL)
            workers[victim].wait()
            workers[victim] = _work(moto_bucket, moto_endpoint, *options)
            kills += 1
        wait_until(lambda: ended() >= 40, "the fleet did not finish", 400, every=0.5)
        _wait_for(lambda: not list(store.list(QueueState.PROCESSING.prefix)), timeout=60)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(timeout=120)
    assert kills == 8
    _assert_all_settled(store, expected)
    for digest in expected:
        archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
        assert "Rulebook" in archive.read("document.md").decode()


def test_a_paused_zombie_abandons_its_job_and_touches_nothing_of_the_new_owner(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    make_pdf(tmp_path / "pdfs" / "long.pdf", title="Long", pages=60, seed=1)
    store = open_store(StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint))
    (digest,) = _ingest(store, tmp_path / "pdfs", lease_seconds=2)
    processing = keys.queue_key(QueueState.PROCESSING, digest)
    zombie = _work(moto_bucket, moto_endpoint, "--max-jobs", "1", "--monitor-every", "1000")
    todo = keys.queue_key(QueueState.TODO, digest)
    # the claim is whole (its todo marker gone too) before the zombie is paused
    _wait_for(lambda: store.head(processing) is not None and store.head(todo) is None)
    zombie_id = Claim.from_json(store.get(processing).data).worker_id
    zombie.send_signal(signal.SIGSTOP)
    try:
        _wait_for(lambda: _claim_expired(store, processing))  # on the store's clock
        monitor = subprocess.run(
            [*CLI, "monitor", "--once", "--bucket", moto_bucket, "--endpoint-url", moto_endpoint],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "requeued 1" in monitor.stdout
        assert (
            Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data).attempt == 2
        )
        change_settings(store, {"lease_seconds": 30})  # the zombie, stopped, cannot follow
        owner = _work(moto_bucket, moto_endpoint, "--exit-when-idle")
        _, err = owner.communicate(timeout=300)
        assert owner.returncode == 0, err
        finished = store.get(keys.out_key(digest))
    finally:
        zombie.send_signal(signal.SIGCONT)
    _, err = zombie.communicate(timeout=120)
    assert zombie.returncode == 0, err
    assert store.get(keys.out_key(digest)).etag == finished.etag
    info = json.loads(zipfile.ZipFile(io.BytesIO(finished.data)).read("info.json"))
    assert info["provenance"]["worker_id"] != zombie_id
    assert info["provenance"]["attempt"] == 2
    _assert_all_settled(store, {digest})


@pytest.mark.parametrize(("grace", "ends_in"), [("0.5", "todo"), ("300", "out")])
def test_sigterm_finishes_within_grace_or_hands_the_job_back(
    tmp_path: Path, grace: str, ends_in: str
) -> None:
    make_pdf(tmp_path / "pdfs" / "long.pdf", title="Long", pages=40, seed=2)
    bucket = str(tmp_path / "bucket")
    store = open_store(StoreSettings(bucket=bucket))
    (digest,) = _ingest(store, tmp_path / "pdfs")
    worker = _work(bucket, None, "--grace", grace)
    # the job has begun: claimed
    _wait_for(lambda: store.head(keys.queue_key(QueueState.PROCESSING, digest)) is not None)
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert store.head(keys.queue_key(QueueState.PROCESSING, digest)) is None
    if ends_in == "todo":
        ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
        assert ticket.attempt == 1
        assert store.head(keys.out_key(digest)) is None
    else:
        assert store.head(keys.out_key(digest)) is not None
        assert store.head(keys.queue_key(QueueState.TODO, digest)) is None
