from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.status import collect_status
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue.choosing import claim_next
from bucketdigest.shared.records import Claim, Failure, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore


def _claimed(store: Store, folder: Path, lease: float) -> str:
    Ingestor(store).ingest([FolderSource(folder / "beta.pdf", FileFilter())])
    job = claim_next(store, "crashed-worker", lease).job
    assert job is not None
    return job.digest


def _age(store: LocalStore, key: str, seconds: float) -> None:
    """Make a local marker look ``seconds`` old (its LastModified)."""
    path = store.root / key
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_an_expired_claim_goes_back_to_todo_with_one_more_attempt(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "b")
    digest = _claimed(store, pdf_folder, lease=60)
    processing = keys.queue_key(QueueState.PROCESSING, digest)
    assert sweep(store, MonitorSettings()).changed == 0
    _age(store, processing, 61)
    report = sweep(store, MonitorSettings())
    assert report.requeued == [digest]
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
    assert ticket.attempt == 2
    assert ticket.history[0].worker_id == "crashed-worker"
    assert ticket.history[0].outcome == "lease expired"
    assert store.head(processing) is None


def test_a_claim_out_of_attempts_is_dead_lettered(tmp_path: Path, pdf_folder: Path) -> None:
    store = LocalStore(tmp_path / "b")
    change_settings(store, {"max_attempts": 2})  # the ticket carries it from its queueing
    digest = _claimed(store, pdf_folder, lease=1)
    for _ in range(2):
        _age(store, keys.queue_key(QueueState.PROCESSING, digest), 5)
        assert sweep(store, MonitorSettings(max_attempts=5)).changed == 1
        claim_next(store, "crashed-again", 1)
    failure = Failure.from_json(store.get(keys.queue_key(QueueState.FAILED, digest)).data)
    assert "lease expired on attempt 2 of 2" in failure.error
    assert [a.attempt for a in failure.ticket.history] == [1, 2]
    assert collect_status(store).counts == {"todo": 0, "processing": 0, "failed": 1, "done": 0}


def test_a_lease_far_in_the_future_is_bounded_by_stale_after(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "b")
    digest = _claimed(store, pdf_folder, lease=60)
    processing = keys.queue_key(QueueState.PROCESSING, digest)
    marker = store.get(processing)
    claim = Claim.from_json(marker.data)
    skewed = replace(claim, lease_until=claim.heartbeat_at + timedelta(days=365))
    store.put(processing, skewed.to_json())
    _age(store, processing, 3600)
    assert sweep(store, MonitorSettings(stale_after=7200)).changed == 0
    _age(store, processing, 7300)
    assert sweep(store, MonitorSettings(stale_after=7200)).requeued == [digest]


def test_an_expired_claim_of_a_finished_document_is_just_cleaned_up(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "b")
    digest = _claimed(store, pdf_folder, lease=1)
    store.put(keys.out_key(digest), b"zip")
    _age(store, keys.queue_key(QueueState.PROCESSING, digest), 5)
    assert sweep(store, MonitorSettings()).finalized == [digest]
    assert list(store.list("queue/")) == []


def test_status_counts_each_state(tmp_path: Path, pdf_folder: Path) -> None:
    store = LocalStore(tmp_path / "b")
    Ingestor(store).ingest([FolderSource(pdf_folder, FileFilter())])
    claim_next(store, "w", 60)
    status = collect_status(store)
    assert status.counts == {"todo": 2, "processing": 1, "failed": 0, "done": 0}
    assert status.runs[0].queued == 3


def test_a_damaged_claim_is_requeued_from_the_source_after_stale_after(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "b")
    digest = _claimed(store, pdf_folder, lease=60)
    processing = keys.queue_key(QueueState.PROCESSING, digest)
    store.put(processing, b"not json")
    assert sweep(store, MonitorSettings(stale_after=600)).changed == 0
    _age(store, processing, 601)
    assert sweep(store, MonitorSettings(stale_after=600)).requeued == [digest]
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
    assert (ticket.digest, ticket.ext) == (digest, "pdf")
    assert store.head(processing) is None
