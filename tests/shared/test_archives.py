"""Archives from the bucket are untrusted: no member name, however made, writes outside its
folder; a hostile checkpoint or result zip is refused whole and writes nothing at all."""

from __future__ import annotations

import io
import logging
import os
import stat
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.catalog import fetch_result
from bucketdigest.shared import keys, queue
from bucketdigest.shared.archives import check_member_name, extract, member_path
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.errors import UnsafeArchive
from bucketdigest.shared.records import OutputRecord, OutputStatus
from bucketdigest.shared.result import DIGESTS
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

_NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOSTILE = [
    "../escape.txt",
    "a/../../escape.txt",
    "/tmp/absolute.txt",
    "C:/windows.txt",
    "c:escape.txt",
    "..\\escape.txt",
    "a/./b.txt",
    "a//b.txt",
    "a/\x00b.txt",
    "",
    "x" * 1100,
]

# names shaped like the attacks: separators, dots, drive letters and any other character
_pieces = ["/", "\\", ".", "..", ":", "C", "a", "\x00", "\u2028"]
_parts = st.lists(st.sampled_from(_pieces), max_size=12).map("".join)
member_names = st.one_of(st.text(max_size=40), _parts, st.sampled_from(HOSTILE))


def _zip(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def _files_under(folder: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(top, name), folder)
        for top, _, names in os.walk(folder)
        for name in names
    }


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=member_names)
def test_no_member_name_reaches_outside_its_folder(tmp_path: Path, name: str) -> None:
    root = tmp_path / "job"
    root.mkdir(exist_ok=True)
    try:
        path = member_path(root, name)
    except UnsafeArchive:
        return
    assert path.resolve().is_relative_to(root.resolve())
    assert ".." not in check_member_name(name).parts


@pytest.mark.filterwarnings("ignore:Duplicate name")
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(member_names, min_size=1, max_size=4, unique=True))
def test_extracting_any_archive_writes_only_inside_its_folder(
    tmp_path: Path, names: list[str]
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as fresh:
        sandbox = Path(fresh)
        root = sandbox / "job"
        root.mkdir()
        try:
            blob = _zip({name: b"x" for name in names})
        except (ValueError, UnicodeEncodeError):
            return  # zipfile itself cannot write such a name
        try:
            written = extract(zipfile.ZipFile(io.BytesIO(blob)), root)
        except UnsafeArchive:
            return
        for name in written:
            path = member_path(root, name.removesuffix("/"))
            assert path.resolve().is_relative_to(root.resolve())
        assert all(f.startswith("job/") for f in _files_under(sandbox))


def test_a_symlink_member_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    blob = _zip({"a.md": b"fine"}, links={"link": "/etc"})
    with pytest.raises(UnsafeArchive, match="not a file"):
        extract(zipfile.ZipFile(io.BytesIO(blob)), tmp_path)
    assert _files_under(tmp_path) == set()


def test_a_symlink_already_in_the_folder_is_no_way_out(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "job" / "pages").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafeArchive, match="resolves outside"):
        extract(zipfile.ZipFile(io.BytesIO(_zip({"pages/x.md": b"x"}))), tmp_path / "job")
    assert not (tmp_path / "outside" / "x.md").exists()


def test_a_record_naming_a_path_outside_is_not_a_record() -> None:
    for bad in ("../../.ssh/authorized_keys", "/etc/passwd"):
        with pytest.raises(ValueError, match="refused"):
            OutputRecord(
                "markdown", "doc-to-markdown", "1", OutputStatus.COMPLETED,
                _NOW, _NOW, artifacts=(bad,),
            )  # fmt: skip
    with pytest.raises(ValueError, match="digester"):
        OutputRecord("markdown", "../..", "1", OutputStatus.COMPLETED, _NOW, _NOW)


def test_a_hostile_checkpoint_writes_nothing_outside_and_the_job_still_finishes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A token holding a claim puts a checkpoint whose members climb out of the job folder,
    then hands the job back: the honest worker that takes it over ignores the checkpoint,
    writes nothing outside its folder, and makes the result from the source."""
    store = LocalStore(tmp_path / "bucket")
    change_settings(store, {"converter_mode": "legacy"})
    make_pdf(tmp_path / "in" / "doc.pdf", title="Doc", pages=1, seed=1)
    digest = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())]).files[0].digest
    depth = "../" * 12
    target = tmp_path / "planted.txt"
    hostile = _zip(
        {
            f"{depth}{str(target).lstrip('/')}": b"owned",
            str(target): b"owned",
            DIGESTS: b'{"digest": "' + digest.encode() + b'", "file_type": "pdf", "outputs": []}',
        },
        links={"images": str(tmp_path)},
    )
    job = queue.claim(store, digest, "token-worker", 60).job
    assert job is not None
    store.put(keys.work_checkpoint_key(digest, 1), hostile)
    assert queue.hand_back(store, job.claim.ticket, job.etag)
    with caplog.at_level(logging.WARNING, logger="bucketdigest.worker.checkpoint"):
        summary = Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    assert "checkpoint-0001.zip: archive member" in caplog.text, "the checkpoint was read"
    assert summary.outcomes == {"done": 1}
    assert not target.exists(), "the checkpoint planted a file outside the job folder"
    assert store.head(keys.out_key(digest)) is not None


def test_a_hostile_result_zip_is_refused_by_get(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    digest = "a" * 64
    store.put(keys.out_key(digest), _zip({"info.json": b"{}", "../../escape.txt": b"owned"}))
    dest = tmp_path / "out" / "doc"
    with pytest.raises(UnsafeArchive, match=r"escape\.txt"):
        fetch_result(store, digest, dest)
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "out" / "escape.txt").exists()
