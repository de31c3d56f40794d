"""Priorities: high first, no lane starves, moving a document between lanes, and ingest
setting the lane; every state query sees every lane."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.monitor.repair import prioritize
from bucketdigest.monitor.status import collect_status
from bucketdigest.shared import keys, queue
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.queue.choosing import Claimer
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore


def _queue(store: LocalStore, priority: Priority, count: int, tag: str) -> set[str]:
    digests = set()
    for index in range(count):
        digest = hashlib.sha256(f"{tag}-{index}".encode()).hexdigest()
        name = (f"{tag}-{index}.pdf",)
        ticket = Ticket(digest, "pdf", 1, name, datetime.now(UTC), priority=priority)
        assert queue.enqueue(store, ticket)
        digests.add(digest)
    return digests


def test_high_goes_first_yet_normal_and_low_still_get_their_share(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    high = _queue(store, Priority.HIGH, 300, "high")
    normal = _queue(store, Priority.NORMAL, 300, "normal")
    _queue(store, Priority.LOW, 300, "low")
    counting = CountingStore(store)
    claimer = Claimer(counting, "w", 600, rng=random.Random(7))
    taken = []
    for _ in range(200):
        job = claimer.next().job
        assert job is not None
        taken.append(job.digest)
    lanes = Counter("high" if d in high else "normal" if d in normal else "low" for d in taken)
    assert lanes["high"] > 150
    assert lanes["normal"] >= 10 and lanes["low"] >= 4  # a flood of high starves no one
    assert counting.requests["LIST"] / len(taken) < 0.5  # about one LIST per 16 claims


def test_the_first_claim_takes_a_high_document_among_many_normal_ones(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    _queue(store, Priority.NORMAL, 500, "normal")
    (urgent,) = _queue(store, Priority.HIGH, 1, "urgent")
    firsts = [Claimer(store, f"w{i}", 600, rng=random.Random(i)).next().job for i in range(5)]
    assert sum(job is not None and job.digest == urgent for job in firsts) == 1
    assert firsts[0] is not None and firsts[0].digest == urgent  # its lottery drew high first


def test_status_and_state_queries_see_every_lane_and_prioritize_moves_documents(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    (waiting,) = _queue(store, Priority.LOW, 1, "low")
    _queue(store, Priority.NORMAL, 2, "normal")
    assert collect_status(store).counts["todo"] == 3
    assert queue.state_of(store, waiting) is DocState.TODO
    done = hashlib.sha256(b"done").hexdigest()
    assert prioritize(store, [waiting, done], Priority.HIGH) == ([waiting], [done])
    lane, _ = queue.todo_marker(store, waiting) or (None, None)
    assert lane is Priority.HIGH
    assert store.head(keys.queue_key(QueueState.TODO, waiting, Priority.LOW)) is None
    assert collect_status(store).counts["todo"] == 3
    queue.remove(store, waiting)
    assert queue.state_of(store, waiting) is None


def test_ingest_queues_in_the_lane_asked_and_moves_what_waits_already(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    report = ingest_sources(store, [str(pdf_folder)], IngestSettings(priority=Priority.LOW))
    digests = [f.digest for f in report.files]
    assert all(queue.todo_marker(store, d)[0] is Priority.LOW for d in digests)  # type: ignore[index]
    ingest_sources(store, [str(pdf_folder)], IngestSettings(priority=Priority.HIGH))
    assert all(queue.todo_marker(store, d)[0] is Priority.HIGH for d in digests)  # type: ignore[index]
    assert collect_status(store).counts["todo"] == len(digests)


def test_a_short_queue_is_known_lane_by_lane_from_one_listing(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    high = _queue(store, Priority.HIGH, 2, "h")
    normal = _queue(store, Priority.NORMAL, 3, "n")
    low = _queue(store, Priority.LOW, 1, "l")
    counting = CountingStore(store)
    claimer = Claimer(counting, "w1", 60.0, normal_first=0.0, low_first=0.0)
    taken = [claimer.next().job for _ in range(7)]
    digests = [job.digest for job in taken if job is not None]
    assert set(digests[:2]) == high and set(digests[2:5]) == normal and set(digests[5:]) == low
    assert taken[-1] is None
    assert counting.requests["LIST"] == 2, "one listing found every lane, one found them empty"


def test_a_job_waiting_for_its_retry_time_is_reported_waiting_however_the_lanes_were_listed(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    later = datetime.now(UTC) + timedelta(hours=1)
    digest = hashlib.sha256(b"backing off").hexdigest()
    ticket = Ticket(digest, "pdf", 1, ("b.pdf",), datetime.now(UTC), attempt=2, not_before=later)
    assert queue.enqueue(store, ticket)
    _queue(store, Priority.LOW, 1, "other")  # two lanes to list: one listing of them all
    claimer = Claimer(store, "w1", 60.0, normal_first=0.0, low_first=0.0)
    assert claimer.next().job is not None  # the low lane's job
    for _ in range(3):  # from the listing's candidates, then from the lanes known empty
        found = claimer.next()
        assert found.job is None and found.deferred, "a worker must not leave it behind"
