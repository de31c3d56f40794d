"""``force_ocr``: every page of a PDF read by OCR, its text layer left aside, set for the
bucket (``config set force_ocr true``) or for one document (a conversion request's), whose
own settings its reprocessing keeps."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared import keys, queue
from bucketdigest.shared.records import DocumentSettings, Ticket
from bucketdigest.worker.digesters import CHAIN
from bucketdigest.worker.reprocess import reprocess
from tests.documents import mislayered_pdf

LAYER = "Unicorns sing at dawn beside the silver lake."


def _result(bucket: Path, digest: str) -> tuple[str, dict, dict]:
    with zipfile.ZipFile(bucket / keys.out_key(digest)) as result:
        return (
            result.read("document.md").decode(),
            json.loads(result.read("info.json")),
            json.loads(result.read("document.json")),
        )


def test_the_buckets_force_ocr_reads_what_the_page_shows(tmp_path: Path) -> None:
    pdf = mislayered_pdf(tmp_path / "in" / "layered.pdf", LAYER)
    bucket = Bucket(tmp_path / "bucket")
    digest = bucket.upload(pdf).files[0].digest
    assert bucket.work().outcomes == {"done": 1}
    assert "Unicorns sing" in _result(tmp_path / "bucket", digest)[0]

    bucket.configure(force_ocr=True)
    assert reprocess(bucket.store, [digest], None, outdated=True).requeued
    assert bucket.work().outcomes == {"done": 1}
    markdown, info, structure = _result(tmp_path / "bucket", digest)
    assert "Dragons breathe fire" in markdown and "Unicorns" not in markdown
    assert info["provenance"]["chain_settings"]["force_ocr"] is True
    assert info["provenance"]["document_settings"] is None
    assert [p["words"] for p in structure["pages"]] == ["ocr"]
    dragons = [b for b in structure["blocks"] if "Dragons" in b["text"]]
    assert dragons and dragons[0]["regions"], "the OCR words locate the text"


def test_a_documents_own_settings_shape_it_and_its_reprocessing_keeps_them(
    tmp_path: Path,
) -> None:
    pdf = mislayered_pdf(tmp_path / "in" / "own.pdf", LAYER)
    bucket = Bucket(tmp_path / "bucket")
    digest = bucket.upload(pdf, settings=DocumentSettings(force_ocr=True)).files[0].digest
    assert bucket.work().outcomes == {"done": 1}
    markdown, info, _ = _result(tmp_path / "bucket", digest)
    assert "Dragons breathe fire" in markdown and "Unicorns" not in markdown
    assert info["provenance"]["document_settings"] == {"force_ocr": True}

    def queued() -> DocumentSettings | None:
        found = queue.todo_marker(bucket.store, digest)
        assert found is not None
        return Ticket.from_json(found[1].data).settings

    assert reprocess(bucket.store, [digest], "tags", outdated=False).requeued
    assert queued() == DocumentSettings(force_ocr=True), "kept from the result"
    bucket.work()
    german = DocumentSettings(ocr_language="deu")
    whole_chain = [d.name for d in CHAIN]
    assert reprocess(bucket.store, [digest], None, False, german).requeued == {digest: whole_chain}
    assert queued() == DocumentSettings(ocr_language="deu", force_ocr=True), "asked over kept"
