"""Pages Tesseract cannot read get their text all the same: a page scanned upside down is
turned upright (orientation detection), and a page Tesseract reads nothing or only noise of
(Chinese, which it has no language data for here) is read by PP-OCR, whose lines and scores
are kept beside the text; scribbles stay doubtful, their reading marked so."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.stores.local import LocalStore
from tests.documents import chinese_scan_pdf, scanned_pdf, scribbled_pdf
from tests.search.conftest import digest_folder

CHINESE = ["龙每回合喷火一次", "每场战斗之前掷先攻"]
RULES = (
    "Dragons breathe fire once per round. Roll initiative before every battle. "
    "Knights move two squares and then strike. Archers shoot twice when they stand still. "
    "A wizard casts one spell per turn and rests on the next. The castle falls when its "
    "gate is broken and its keep is taken. Every player draws three cards at dawn."
)


def _ocr_record(result: zipfile.ZipFile) -> dict:
    outputs = json.loads(result.read("digests.json"))["outputs"]
    (ocr,) = [output["content"] for output in outputs if output["output"] == "ocr"]
    return ocr


def test_pages_tesseract_cannot_read_are_read_upright_or_by_pp_ocr(tmp_path: Path) -> None:
    scanned_pdf(tmp_path / "in" / "upside-down.pdf", rotate=180, body=RULES)
    chinese_scan_pdf(tmp_path / "in" / "chinese.pdf", CHINESE)
    scribbled_pdf(tmp_path / "in" / "letter.pdf")
    store = LocalStore(tmp_path / "bucket")
    digests = digest_folder(store, tmp_path / "in")

    def result(name: str) -> zipfile.ZipFile:
        return zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digests[name])).data))

    with result("upside-down.pdf") as turned:
        assert RULES in " ".join(turned.read("ocr/0001.md").decode().split())
        assert "second_reader" not in _ocr_record(turned), "Tesseract read it, turned upright"
    with result("chinese.pdf") as chinese:
        text = plain_text(chinese.read("document.md").decode())
        assert all(line in text.replace(" ", "") for line in CHINESE), text
        assert "0.9" in chinese.read("ocr/0001.rapidocr.tsv").decode()
        ocr = _ocr_record(chinese)
        assert set(ocr["second_reader"]) == {"1"}
        assert "RapidOCR" in ocr["engine"]
        # PP-OCR's lines give the page's blocks their regions, where the scan shows them
        structure = json.loads(chinese.read("document.json"))
        assert structure["pages"][0]["words"] == "ocr"
        lines = [b for b in structure["blocks"] if b["text"]]
        assert [b["text"].replace(" ", "") for b in lines] == CHINESE
        for number, block in enumerate(lines):
            (region,) = block["regions"]
            top = 120 + 60 * number - 28  # chinese_scan_pdf's baseline, less the font size
            assert abs(region["y0"] - top) < 12 and abs(region["x0"] - 72) < 12, region
    with result("letter.pdf") as letter:
        page = letter.read("document.md").decode()
        assert "<!--doubtful-->" in page, "neither reader is sure: marked doubtful"
