"""A page that hangs the converter (tens of thousands of filled paths: its layout analysis
takes minutes) costs only itself: the process converting it is stopped at its time limit, the
job starts it again at once, the range is converted page by page, and the page it dies on alone
gets its plain text; the document is done in its first attempt."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pymupdf

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.result import page_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from bucketdigest.worker.sandbox import SandboxLimits


def _poisoned(path: Path) -> Path:
    doc = pymupdf.open()
    for number in (1, 2, 3):
        page = doc.new_page()
        page.insert_text((72, 72), f"Page {number} explains the rules of the siege in detail.")
        if number == 2:
            shape = page.new_shape()
            for i in range(20_000):
                x, y = 50 + (i % 400), 100 + (i // 400) * 6
                shape.draw_rect(pymupdf.Rect(x, y, x + 0.8, y + 0.8))
                shape.finish(color=(0, 0, 0), fill=(i % 7 / 7, 0, 0), width=0.1)
            shape.commit()
    doc.save(path)
    return path


def test_a_page_that_hangs_the_converter_costs_only_itself(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    _poisoned(folder / "siege.pdf")
    store = LocalStore(tmp_path / "bucket")
    (document,) = Ingestor(store).ingest([FolderSource(folder, FileFilter())]).files
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        idle_sleep=0.1,
        limits=SandboxLimits(timeout=6.0, per_page=0.0),
    )
    assert Worker(store, settings).run().outcomes == {"done": 1}

    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(document.digest)).data))
    info = json.loads(archive.read("info.json"))
    assert any("page 2: the converter crashed or ran out of time" in p for p in info["problems"])
    for number in (1, 2, 3):
        assert f"Page {number} explains" in archive.read(page_member(number)).decode()
    records = json.loads(archive.read("digests.json"))["outputs"]
    assert next(r for r in records if r["output"] == "markdown")["attempts"] == 1
