"""A new revision of a document takes from its predecessor's result the work done on what did
not change (Markdown and OCR text of unchanged pages, embeddings of unchanged chunks), says so
in digests.json, and ends with the result a from-scratch run of the same file makes."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pymupdf

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings

SETTINGS = WorkerSettings(
    exit_when_idle=True,
    monitor_every=None,
    idle_sleep=0.1,
    digest=DigestSettings(converter=ConverterOptions(range_pages=3)),
)
NOT_COMPARED = {"digests.json", "info.json", "embeddings.npy", "windows.npy"}
"""Records and info name the predecessor and the run; vectors are compared with a tolerance."""


def _digest(store: LocalStore, folder: Path) -> str:
    """Ingest ``folder`` (its one file), run a worker until idle; the document's hash."""
    (ingested,) = Ingestor(store).ingest([FolderSource(folder, FileFilter())]).files
    assert Worker(store, SETTINGS).run().outcomes == {"done": 1}
    return ingested.digest


def _members(store: LocalStore, digest: str) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
    return {name: archive.read(name) for name in archive.namelist()}


def _taken(members: dict[str, bytes]) -> dict[str, dict[str, int]]:
    """Per output, what it took from the predecessor and what it computed."""
    records = json.loads(members["digests.json"])["outputs"]
    return {
        r["output"]: {k: r["content"]["from_predecessor"][k] for k in ("reused", "recomputed")}
        for r in records
        if isinstance(r.get("content"), dict) and "from_predecessor" in r["content"]
    }


def _revise_and_compare(tmp_path: Path, first: Path, second: Path) -> dict[str, bytes]:
    """Digest ``first`` then, at the same path, ``second``; digest ``second`` alone in a fresh
    bucket; assert the two results of ``second`` are equal. The incremental result."""
    folder = tmp_path / "source"
    folder.mkdir()
    store = LocalStore(tmp_path / "bucket")
    shutil.copy(first, folder / "book.pdf")
    old = _digest(store, folder)
    shutil.copy(second, folder / "book.pdf")
    new = _digest(store, folder)
    incremental = _members(store, new)
    assert json.loads(incremental["info.json"])["supersedes"] == old

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(second, fresh / "book.pdf")
    scratch = _members(
        LocalStore(tmp_path / "scratch"), _digest(LocalStore(tmp_path / "scratch"), fresh)
    )
    assert set(incremental) == set(scratch)
    for name in set(scratch) - NOT_COMPARED:
        assert incremental[name] == scratch[name], name
    for vectors in ("embeddings.npy", "windows.npy"):
        made = [np.load(io.BytesIO(m[vectors])) for m in (incremental, scratch)]
        assert made[0].shape == made[1].shape and np.allclose(*made, atol=1e-5), vectors
    assert not _taken(scratch)
    return incremental


def test_a_text_revision_reuses_unchanged_pages_and_equals_a_fresh_run(tmp_path: Path) -> None:
    first = make_pdf(tmp_path / "v1.pdf", title="Core Rules", pages=9, seed=4)
    doc = pymupdf.open(first)
    doc[4].insert_text((72, 72), "Errata: a shield gives a bonus of two, not one.")
    doc.insert_page(-1, text="Appendix: the new rules for flying mounts and their riders.")
    doc.save(tmp_path / "v2.pdf", garbage=3)

    result = _revise_and_compare(tmp_path, first, tmp_path / "v2.pdf")

    taken = _taken(result)  # page 5 changed, page 10 new
    assert taken["markdown"] == {"reused": 8, "recomputed": 2}
    assert taken["embeddings"]["reused"] > taken["embeddings"]["recomputed"] > 0


def _scanned_book(path: Path, pages: list[str]) -> Path:
    """One scanned page (text only as pixels) per entry of ``pages``."""
    scanned = pymupdf.open()
    for text in pages:
        source = pymupdf.open()
        page = source.new_page()
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 400), text, fontsize=18)
        scanned.new_page().insert_image(page.rect, pixmap=page.get_pixmap(dpi=150))
    scanned.save(path)
    return path


def test_a_scanned_revision_reads_only_the_changed_pages_again(tmp_path: Path) -> None:
    pages = [
        "Dragons breathe fire once per round.",
        "Roll initiative before every battle.",
        "A knight moves two squares and one across.",
    ]
    first = _scanned_book(tmp_path / "v1.pdf", pages)
    second = _scanned_book(tmp_path / "v2.pdf", [pages[0], "Goblins flee at dusk.", pages[2]])

    result = _revise_and_compare(tmp_path, first, second)

    assert _taken(result)["ocr"] == {"reused": 2, "recomputed": 1}
    assert b"Goblins" in result["ocr/0002.md"]
