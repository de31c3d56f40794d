from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.opening import open_sources
from bucketdigest.ingestor.scan import FileFilter, scan_folder
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import IngestRun, SourceRecord, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore

PDF = FileFilter()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_first_ingest_uploads_each_document_and_queues_it(store: Store, pdf_folder: Path) -> None:
    report = Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    assert (report.run.discovered, report.run.uploaded, report.run.queued) == (3, 3, 3)
    for path in pdf_folder.rglob("*.pdf"):
        digest = _sha(path)
        assert store.get(keys.raw_key(digest, "pdf")).data == path.read_bytes()
        ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
        assert ticket.names == (path.relative_to(pdf_folder).as_posix(),)
        assert ticket.size == path.stat().st_size


def test_re_ingesting_uploads_and_queues_nothing_new(store: Store, pdf_folder: Path) -> None:
    Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    again = Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    assert (again.run.uploaded, again.run.queued, len(again.run.errors)) == (0, 0, 0)
    assert {(f.state, f.queued) for f in again.files} == {(DocState.TODO, False)}


def test_a_source_this_run_uploaded_is_queued_without_asking_the_queue(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = CountingStore(LocalStore(tmp_path / "bucket"))
    report = Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    assert {(f.state, f.queued) for f in report.files} == {(DocState.TODO, True)}
    # per file: HEAD result, HEAD source; no HEAD of the three queue folders
    assert store.requests["HEAD"] == 2 * 3


def test_documents_already_done_are_skipped(store: Store, pdf_folder: Path) -> None:
    done = _sha(pdf_folder / "alpha.pdf")
    store.put(keys.out_key(done), b"zip")
    report = Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    assert report.run.already_done == 1
    assert store.head(keys.queue_key(QueueState.TODO, done)) is None
    assert store.head(keys.raw_key(done, "pdf")) is None


def test_listing_mode_gives_the_same_result_with_fewer_requests(
    tmp_path: Path, pdf_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    per_file = Ingestor(LocalStore(tmp_path / "a"))
    per_file.ingest([FolderSource(pdf_folder, PDF)])
    per_file_again = Ingestor(LocalStore(tmp_path / "a")).ingest([FolderSource(pdf_folder, PDF)])
    monkeypatch.setattr("bucketdigest.ingestor.known.LISTING_THRESHOLD", 1)
    listed = Ingestor(LocalStore(tmp_path / "b"))
    listed.ingest([FolderSource(pdf_folder, PDF)])
    listed_again = Ingestor(LocalStore(tmp_path / "b")).ingest([FolderSource(pdf_folder, PDF)])
    assert sorted((f.path, f.state) for f in listed_again.files) == sorted(
        (f.path, f.state) for f in per_file_again.files
    )
    assert listed_again.run.store_requests < per_file_again.run.store_requests


def test_the_registry_records_every_path_of_a_document(store: Store, pdf_folder: Path) -> None:
    (pdf_folder / "copy.pdf").write_bytes((pdf_folder / "beta.pdf").read_bytes())
    Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    digest = _sha(pdf_folder / "beta.pdf")
    records = [
        SourceRecord.from_json(store.get(info.key).data)
        for info in store.list(keys.registry_doc_prefix(digest))
    ]
    assert sorted(r.path for r in records) == ["beta.pdf", "copy.pdf"]


def test_each_run_writes_a_run_record(store: Store, pdf_folder: Path) -> None:
    report = Ingestor(store).ingest([FolderSource(pdf_folder, PDF)])
    saved = IngestRun.from_json(store.get(keys.run_key(report.run.run_id)).data)
    assert saved.queued == 3 and saved.store_requests > 0


def test_unreadable_files_are_reported_by_name_and_the_rest_proceed(
    tmp_path: Path, pdf_folder: Path
) -> None:
    missing = str(tmp_path / "missing")
    sources, errors = open_sources([str(pdf_folder), missing], PDF, ref="HEAD", cache_dir=tmp_path)
    report = Ingestor(LocalStore(tmp_path / "s")).ingest(sources, errors)
    assert report.run.queued == 3
    assert [e.path for e in report.run.errors] == [missing]
    assert "no such file, folder or repository" in report.run.errors[0].reason


def test_a_broken_link_is_reported_by_name_and_the_rest_proceed(
    tmp_path: Path, pdf_folder: Path
) -> None:
    (pdf_folder / "moved.pdf").symlink_to(tmp_path / "gone.pdf")
    report = Ingestor(LocalStore(tmp_path / "s")).ingest([FolderSource(pdf_folder, PDF)])
    assert [(e.path, e.reason) for e in report.run.errors] == [
        ("moved.pdf", "broken symbolic link")
    ]
    assert report.run.queued == 3 and report.run.discovered == 4


def test_scan_filters_by_extension_include_and_exclude(pdf_folder: Path) -> None:
    (pdf_folder / "notes.txt").write_text("x")
    names = lambda f: [i.path for i in scan_folder(pdf_folder, f)]  # noqa: E731
    assert names(PDF) == [
        pdf_folder / "alpha.pdf",
        pdf_folder / "beta.pdf",
        pdf_folder / "sub/gamma.pdf",
    ]
    assert names(FileFilter(include=("sub/*",))) == [pdf_folder / "sub/gamma.pdf"]
    assert names(FileFilter(exclude=("*/gamma.pdf", "beta*"))) == [pdf_folder / "alpha.pdf"]
    assert names(FileFilter(exts=frozenset({"txt"}))) == [pdf_folder / "notes.txt"]


def test_scan_survives_symlink_loops(pdf_folder: Path) -> None:
    (pdf_folder / "sub" / "loop").symlink_to(pdf_folder)
    found = [i.relative for i in scan_folder(pdf_folder, PDF)]
    assert found == ["alpha.pdf", "beta.pdf", "sub/gamma.pdf"]
