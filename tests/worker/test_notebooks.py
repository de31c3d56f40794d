"""Supernote notebooks: pages rendered to images, thumbnail and OCR run on them like on a
scan; a corrupt notebook fails with the reason."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

from PIL import Image

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys, queue
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.result import page_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "supernote-blank-page.note"


def test_a_notebook_page_is_rendered_thumbnailed_and_ocrd(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "blank.note")
    (folder / "torn.note").write_bytes(FIXTURE.read_bytes()[:3000])
    store = LocalStore(tmp_path / "bucket")
    notebooks = FileFilter(exts=EXTENSION_GROUPS["notebooks"])
    report = Ingestor(store).ingest([FolderSource(folder, notebooks)])
    digests = {f.path: f.digest for f in report.files}
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    assert Worker(store, settings).run().outcomes == {"done": 1, "failed": 1}

    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digests["blank.note"])).data))
    assert archive.read(page_member(1)).decode().startswith("![page 1](../images/page-0001.png)")
    with Image.open(io.BytesIO(archive.read("images/page-0001.png"))) as image:
        assert image.size == (1404, 1872)
    records = json.loads(archive.read("digests.json"))["outputs"]
    statuses = {r["output"]: r["status"] for r in records}
    assert statuses["thumbnail"] == statuses["ocr"] == statuses["embeddings"] == "completed"
    ocr = next(r for r in records if r["output"] == "ocr")
    assert ocr["content"]["pages"] == [1]  # OCR'd, and a blank page gives no text
    assert json.loads(archive.read("info.json"))["pages"] == 1

    failure = queue.read_failure(store, digests["torn.note"])
    assert failure is not None
    assert failure.error == "not a readable Supernote notebook: the file is damaged or truncated"
