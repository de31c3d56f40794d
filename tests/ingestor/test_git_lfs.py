"""Ingesting a Git LFS repository with real git and git-lfs over a file:// remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor, IngestReport
from bucketdigest.ingestor.opening import open_sources
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from tests.ingestor.conftest import LFS_NAMES, LfsRemote

PDF = FileFilter()


def _ingest(store: Store, spec: str, cache: Path) -> IngestReport:
    sources, errors = open_sources([spec], PDF, ref="HEAD", cache_dir=cache)
    return Ingestor(store).ingest(sources, errors)


def _finish_all(store: Store) -> None:
    """Stand-in for the workers: mark every queued document done."""
    for info in list(store.list(QueueState.TODO.prefix)):
        _, digest = keys.parse_queue_key(info.key)
        store.put(keys.out_key(digest), b"zip")
        store.delete(info.key)


def test_first_ingest_fetches_and_uploads_each_document_once(
    lfs_remote: LfsRemote, tmp_path: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    report = _ingest(store, lfs_remote.url, tmp_path / "cache")
    assert report.run.errors == ()
    assert (report.run.discovered, report.run.uploaded, report.run.queued) == (11, 11, 11)
    lfs_bytes = sum(lfs_remote.files[n].stat().st_size for n in LFS_NAMES)
    assert report.run.bytes_downloaded == lfs_bytes
    for name, path in lfs_remote.files.items():
        assert store.get(keys.raw_key(lfs_remote.digest(name), "pdf")).data == path.read_bytes(), (
            name
        )
    commit = lfs_remote.git("rev-parse", "HEAD").strip()
    assert report.run.commits == (commit,)
    records = [
        SourceRecord.from_json(store.get(i.key).data) for i in store.list(keys.REGISTRY_DOCS_PREFIX)
    ]
    assert sorted(r.path for r in records) == sorted(lfs_remote.files)
    assert {r.commit for r in records} == {commit}
    assert not list((tmp_path / "cache").rglob("lfs/objects/*/*/*")), (
        "LFS cache copies must be deleted"
    )


def test_re_ingesting_a_done_repository_downloads_nothing(
    lfs_remote: LfsRemote, tmp_path: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    _ingest(store, lfs_remote.url, tmp_path / "cache")
    _finish_all(store)
    lfs_remote.hide_lfs_objects()
    again = _ingest(store, lfs_remote.url, tmp_path / "cache")
    assert again.run.errors == ()
    assert again.run.bytes_downloaded == 0
    assert again.run.already_done == 11  # the plain PDF is read from the clone, not downloaded
    assert again.run.store_requests < again.run.discovered


def test_adding_one_file_fetches_exactly_that_file(lfs_remote: LfsRemote, tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    _ingest(store, lfs_remote.url, tmp_path / "cache")
    _finish_all(store)
    added = lfs_remote.add_pdf("docs/new, [1].pdf", 55)
    lfs_remote.commit_and_push("one more")
    again = _ingest(store, lfs_remote.url, tmp_path / "cache")
    assert (again.run.uploaded, again.run.queued) == (1, 1)
    assert again.run.bytes_downloaded == added.stat().st_size
    assert store.head(keys.queue_key(QueueState.TODO, lfs_remote.digest("docs/new, [1].pdf")))


def test_a_local_repository_path_is_ingested_as_a_repository(
    lfs_remote: LfsRemote, tmp_path: Path
) -> None:
    report = _ingest(LocalStore(tmp_path / "bucket"), str(lfs_remote.work), tmp_path / "cache")
    assert report.run.queued == 11 and report.run.errors == ()


def _commit_raw_pointer(remote: LfsRemote, name: str, text: str) -> None:
    path = remote.work / name
    path.write_text(text)
    remote.commit_and_push(f"add {name}", verify=False)


def test_malformed_and_missing_objects_are_reported_and_the_rest_proceed(
    lfs_remote: LfsRemote, tmp_path: Path
) -> None:
    _commit_raw_pointer(
        lfs_remote,
        "plain/bad.pdf",
        "version https://git-lfs.github.com/spec/v1\noid sha256:XYZ\nsize 3\n",
    )
    missing_oid = "0" * 64
    _commit_raw_pointer(
        lfs_remote,
        "plain/missing.pdf",
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{missing_oid}\nsize 1234\n",
    )
    store = LocalStore(tmp_path / "bucket")
    report = _ingest(store, lfs_remote.url, tmp_path / "cache")
    reasons = {e.path: e.reason for e in report.run.errors}
    assert set(reasons) == {"plain/bad.pdf", "plain/missing.pdf"}
    assert "malformed Git LFS pointer" in reasons["plain/bad.pdf"]
    assert "cannot fetch the Git LFS object 000000000000" in reasons["plain/missing.pdf"]
    assert report.run.queued == 11
    assert store.head(keys.queue_key(QueueState.TODO, missing_oid)) is None
    assert store.head(keys.raw_key(missing_oid, "pdf")) is None


def test_content_that_does_not_match_its_pointer_is_refused(
    lfs_remote: LfsRemote, tmp_path: Path
) -> None:
    oid = "ab" * 32
    stored = lfs_remote.bare / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(b"%PDF-1.7 these bytes do not hash to the oid")
    size = stored.stat().st_size
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
    _commit_raw_pointer(lfs_remote, "plain/liar.pdf", pointer)
    report = _ingest(LocalStore(tmp_path / "bucket"), lfs_remote.url, tmp_path / "cache")
    reasons = {e.path: e.reason for e in report.run.errors}
    assert (
        "does not match its LFS pointer" in reasons["plain/liar.pdf"]
        or "cannot fetch" in reasons["plain/liar.pdf"]
    )


def test_an_unreachable_remote_is_an_error_naming_it(tmp_path: Path) -> None:
    url = (tmp_path / "nowhere.git").as_uri()
    report = _ingest(LocalStore(tmp_path / "bucket"), url, tmp_path / "cache")
    assert [e.path for e in report.run.errors] == [url]
    assert "git clone failed" in report.run.errors[0].reason


@pytest.mark.parametrize(
    "spec", ["https://example.invalid/r.git", "git@host:org/repo.git", "ssh://h/r"]
)
def test_urls_are_recognized_as_git_sources(spec: str) -> None:
    from bucketdigest.ingestor.git import is_git_url

    assert is_git_url(spec)
