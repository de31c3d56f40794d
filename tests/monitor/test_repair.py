from __future__ import annotations

import os
import time
from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.repair import reconcile, retry_failed
from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Failure, Ticket
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings


def _digests(store: LocalStore, folder: Path) -> dict[str, str]:
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter())])
    return {f.path: f.digest for f in report.files}


def test_retry_puts_a_dead_letter_back_with_attempts_reset_and_history_kept(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "b")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.pdf").write_text("not a pdf")
    digest = _digests(store, tmp_path / "in")["bad.pdf"]
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
    )
    Worker(store, settings).run()
    assert store.head(keys.queue_key(QueueState.FAILED, digest)) is not None
    assert retry_failed(store) == [digest]
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
    assert ticket.attempt == 1
    assert "not a readable PDF" in ticket.history[0].error
    assert store.head(keys.queue_key(QueueState.FAILED, digest)) is None
    assert retry_failed(store, [digest]) == []


def test_reconcile_enqueues_orphaned_sources_and_removes_markers_of_finished_ones(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "b")
    digests = _digests(store, pdf_folder)
    orphan, finished, dead = digests["alpha.pdf"], digests["beta.pdf"], digests["sub/gamma.pdf"]
    store.delete(keys.queue_key(QueueState.TODO, orphan))
    store.put(keys.out_key(finished), b"zip")
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, dead)).data)
    failure = Failure(ticket, "w", store.now(), "boom", retryable=False)
    store.delete(keys.queue_key(QueueState.TODO, dead))
    store.put(keys.queue_key(QueueState.FAILED, dead), failure.to_json())
    scratch = keys.selftest_key("left-by-a-crash")
    store.put(scratch, b"x")
    past = time.time() - 7200
    os.utime(store.root / scratch, (past, past))

    report = reconcile(store)

    assert report.enqueued == [orphan]
    assert Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, orphan)).data).names == (
        "alpha.pdf",
    )
    assert report.cleaned == [keys.queue_key(QueueState.TODO, finished)]
    assert store.head(keys.queue_key(QueueState.FAILED, dead)) is not None
    assert report.scratch_removed == [scratch]
    assert reconcile(store).enqueued == []


def test_the_consistency_sweep_walks_a_big_bucket_a_bounded_batch_at_a_time(
    tmp_path: Path,
) -> None:
    store = CountingStore(LocalStore(tmp_path / "b"))
    digests = sorted(f"{n:02x}" * 32 for n in range(0, 250, 10))  # 25 sources, none queued
    for digest in digests:
        store.inner.put(keys.raw_key(digest, "pdf"), b"%PDF-")
    finished = digests[3]
    store.inner.put(keys.out_key(finished), b"zip")
    store.inner.put(keys.queue_key(QueueState.TODO, finished), b"{}")

    walked = []
    for _ in range(3):
        store.requests.clear()
        report = reconcile(store, batch=10)
        walked.append(report)
        # one page per prefix whatever the bucket holds, and a registry look-up per repair
        assert store.requests["LIST"] <= 9 + len(report.enqueued)  # 3 todo lanes
    assert [len(r.enqueued) for r in walked] == [9, 10, 5]
    assert sorted(d for r in walked for d in r.enqueued) == [d for d in digests if d != finished]
    assert walked[0].cleaned == [keys.queue_key(QueueState.TODO, finished)]
    assert (walked[0].after, walked[0].until) == ("", digests[9])
    assert (walked[1].after, walked[1].until) == (digests[9], digests[19])
    assert walked[2].after == digests[19]
    again = reconcile(store, batch=10)  # the walk wrapped round: back to the start
    assert again.after == "" and again.enqueued == []
