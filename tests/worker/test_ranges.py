"""A long document's Markdown is made and saved in page ranges: a later attempt, after a crash,
a timeout or a lost lease, starts from the last saved range instead of from page 1."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys
from bucketdigest.shared.pagetext import without_surrogates
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker
from tests.clocks import MovableClock
from tests.worker.test_checkpoint import _records, _settings, kill_worker_when

LEGACY = ConverterOptions(mode="legacy")


def long_pdf(path: Path, pages: int) -> Path:
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 90), f"Chapter {number}", fontsize=18)
        page.insert_text((72, 130), f"Page {number} of the long rules: move, then attack.")
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def test_finished_ranges_are_reused_and_an_unfinished_one_is_converted_again(
    tmp_path: Path,
) -> None:
    source = long_pdf(tmp_path / "long.pdf", pages=120)
    partial = tmp_path / "partial"
    first = convert(source, "pdf", tmp_path / "one", LEGACY, partial)
    assert first.reused_pages == 0
    assert sorted(p.name for p in partial.iterdir()) == [
        "00001-00050",
        "00051-00100",
        "00101-00120",
    ]
    (partial / "00051-00100" / "range.json").unlink()  # as if killed while converting it
    again = convert(source, "pdf", tmp_path / "two", LEGACY, partial)
    assert again.reused_pages == 70
    assert again.pages == first.pages
    assert "Page 120 of the long rules" in again.pages[119]


@pytest.mark.slow
def test_a_worker_killed_in_a_1000_page_conversion_resumes_from_the_saved_ranges(
    tmp_path: Path,
) -> None:
    bucket = tmp_path / "bucket"
    clock = MovableClock()
    store = LocalStore(bucket, clock=clock)
    long_pdf(tmp_path / "in" / "manual.pdf", pages=1000)
    report = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    digest = report.files[0].digest
    kill_worker_when(bucket, lambda: bool(_saved_ranges(store, digest)), "no range was saved")
    saved = _saved_ranges(store, digest)
    assert store.head(keys.out_key(digest)) is None, "finished before it could be killed"

    clock.advance(3600)  # the killed worker's lease is over
    assert sweep(store, MonitorSettings()).requeued == [digest]
    assert Worker(store, _settings()).run().outcomes == {"done": 1}

    with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data)) as archive:
        markdown = _records(store.get(keys.out_key(digest)).data)["markdown"]
        assert json.loads(archive.read("info.json"))["pages"] == 1000
        assert "Page 1 of the long rules" in archive.read("pages/0001.md").decode()
        assert "Page 1000 of the long rules" in archive.read("pages/1000.md").decode()
        assert not [n for n in archive.namelist() if n.startswith("partial/")]
    assert markdown["content"]["reused_pages"] >= 50 * len(saved)
    assert list(store.list(keys.WORK_PREFIX)) == []


def _saved_ranges(store: LocalStore, digest: str) -> set[str]:
    """The page ranges held by the job's checkpoints so far."""
    ranges = set()
    for info in store.list(keys.work_prefix(digest)):
        try:
            data = store.get(info.key).data
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError, KeyError):
            continue  # being written
        ranges |= {n.split("/")[2] for n in names if n.endswith("/range.json")}
    return ranges


def test_pdf_text_with_utf16_surrogates_becomes_valid_unicode() -> None:
    assert without_surrogates("Egyptian \ud80c\udc00 sign") == "Egyptian \U00013000 sign"
    assert without_surrogates("a lone \ud80c here") == "a lone \ufffd here"
