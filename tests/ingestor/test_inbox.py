"""The bucket inbox: objects put under ``inbox/`` are taken in by the monitor duty (stored,
queued with their names, then removed), refused with a reason when they cannot be, and never
lost or taken twice whatever crashes in between."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bucketdigest.ingestor.inbox import INBOX_SOURCE, take_inbox
from bucketdigest.monitor.status import collect_status
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.inbox import InboxReport, inbox_objects, inbox_refusals
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import IngestRun, SourceRecord, Ticket
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from tests.clocks import MovableClock


def _pdf(tmp_path: Path, name: str, seed: int) -> bytes:
    return make_pdf(tmp_path / f"{seed}.pdf", title=name, pages=1, seed=seed).read_bytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_objects_put_in_the_inbox_are_stored_queued_with_their_names_and_removed(
    store: Store, tmp_path: Path
) -> None:
    scans = {
        "2026/scan.pdf": _pdf(tmp_path, "scan", 1),
        "Règles du jeu.pdf": _pdf(tmp_path, "r", 2),
    }
    for name, data in scans.items():
        store.put(keys.inbox_key(name), data)

    report = take_inbox(store, settle=0)

    assert sorted(report.taken) == sorted(scans)
    assert list(inbox_objects(store)) == []
    for name, data in scans.items():
        digest = _sha(data)
        assert store.get(keys.raw_key(digest, "pdf")).data == data
        ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
        assert ticket.names == (name,)
        (record,) = [
            SourceRecord.from_json(store.get(i.key).data)
            for i in store.list(keys.registry_doc_prefix(digest))
        ]
        assert (record.source, record.path) == (INBOX_SOURCE, name)
    run = IngestRun.from_json(store.get(keys.run_key(report.run_id or "")).data)
    assert (run.sources, run.queued, run.removed) == ((INBOX_SOURCE,), 2, ())


def test_what_cannot_be_taken_is_refused_with_a_reason_and_stays_findable(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    change_settings(store, {"inbox_max_bytes": 400_000})
    big = _pdf(tmp_path, "big", 3) + b"%" * 400_000
    store.put(keys.inbox_key("setup.exe"), b"MZ...")
    store.put(keys.inbox_key("empty.pdf"), b"")
    store.put(keys.inbox_key("big.pdf"), big)
    store.put(keys.inbox_key("no extension"), b"text")

    first = take_inbox(store, settle=0)

    reasons = {r.name: r.reason for r in first.refused}
    assert set(reasons) == {"setup.exe", "empty.pdf", "big.pdf", "no extension"}
    assert "no digester handles .exe" in reasons["setup.exe"]
    assert reasons["empty.pdf"] == "an empty file"
    assert "over the limit of 400,000" in reasons["big.pdf"]
    assert "without an extension" in reasons["no extension"]
    assert len(list(inbox_objects(store))) == 4  # left where the user put them
    status = collect_status(store)
    assert status.inbox == 4
    assert {r.name for r in status.refused} == set(reasons)
    assert status.to_dict()["inbox"]["objects"] == 4

    # judged once: a second pass refuses nothing again
    assert take_inbox(store, settle=0).refused == ()
    # a replaced object is judged again, a removed one's refusal goes with it
    good = _pdf(tmp_path, "good", 4)
    store.put(keys.inbox_key("empty.pdf"), good)
    store.delete(keys.inbox_key("setup.exe"))
    third = take_inbox(store, settle=0)
    assert third.taken == ("empty.pdf",)
    assert {r.name for r in inbox_refusals(store)} == {"big.pdf", "no extension"}
    assert store.head(keys.queue_key(QueueState.TODO, _sha(good))) is not None


class _CrashBeforeDelete(LocalStore):
    """A monitor that dies after storing and queueing, before removing from the inbox."""

    def delete(self, key: str, if_match: str | None = None) -> bool:
        if key.startswith(keys.INBOX_PREFIX):
            raise KeyboardInterrupt("killed between copy and delete")
        return super().delete(key, if_match)


def test_a_monitor_killed_between_copy_and_delete_loses_nothing_and_takes_it_once(
    tmp_path: Path,
) -> None:
    data = _pdf(tmp_path, "scan", 5)
    crashing = _CrashBeforeDelete(tmp_path / "bucket")
    crashing.put(keys.inbox_key("scan.pdf"), data)
    with pytest.raises(KeyboardInterrupt):
        take_inbox(crashing, settle=0)
    store = LocalStore(tmp_path / "bucket")
    assert [i.key for i in inbox_objects(store)] == [keys.inbox_key("scan.pdf")]  # still there
    assert store.head(keys.queue_key(QueueState.TODO, _sha(data))) is not None

    again = take_inbox(store, settle=0)

    assert again.taken == ("scan.pdf",)
    assert list(inbox_objects(store)) == []
    markers = [d for d, _ in queue.markers(store, QueueState.TODO)]
    assert markers == [_sha(data)]
    assert len(list(store.list(keys.registry_doc_prefix(_sha(data))))) == 1
    run = IngestRun.from_json(store.get(keys.run_key(again.run_id or "")).data)
    assert (run.uploaded, run.queued) == (0, 0)  # stored and queued by the first pass


class _ReplacedWhileRead(LocalStore):
    """Someone puts a new version of the object while the monitor is reading the old one."""

    replacement = b""

    def download(self, key: str, dest: Path) -> ObjectInfo:
        info = super().download(key, dest)
        if key.startswith(keys.INBOX_PREFIX) and self.replacement:
            self.put(key, self.replacement)
            self.replacement = b""
        return info


def test_a_version_put_while_the_old_one_was_read_stays_for_the_next_pass(
    tmp_path: Path,
) -> None:
    store = _ReplacedWhileRead(tmp_path / "bucket")
    old, new = _pdf(tmp_path, "old", 6), _pdf(tmp_path, "new", 7)
    store.put(keys.inbox_key("scan.pdf"), old)
    store.replacement = new

    take_inbox(store, settle=0)

    assert store.get(keys.inbox_key("scan.pdf")).data == new
    take_inbox(store, settle=0)
    assert list(inbox_objects(store)) == []
    for data in (old, new):
        assert store.head(keys.queue_key(QueueState.TODO, _sha(data))) is not None


def test_an_object_written_moments_ago_waits_for_the_next_pass(tmp_path: Path) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path / "bucket", clock=clock)
    store.put(keys.inbox_key("copying.pdf"), _pdf(tmp_path, "copying", 8))

    waiting = take_inbox(store)
    assert (waiting.taken, waiting.waiting) == ((), 1)

    clock.advance(3)
    assert take_inbox(store).taken == ("copying.pdf",)


def test_a_folder_placeholder_is_no_document(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    (tmp_path / "bucket" / "inbox" / "2026").mkdir(parents=True)
    report = take_inbox(store, settle=0)
    assert (report.taken, report.refused, report.run_id) == ((), (), None)


def test_an_empty_inbox_costs_one_listing_a_pass(tmp_path: Path) -> None:
    store = CountingStore(LocalStore(tmp_path / "bucket"))
    assert take_inbox(store) == InboxReport()
    assert store.total == 1
