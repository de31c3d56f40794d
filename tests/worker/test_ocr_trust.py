"""OCR text is trusted line by line: noise (pen strokes, a blank page's grain) stays out of the
text that is searched, tagged and summarised, kept aside and noted; real text comes through."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.tesseract import parse_tsv
from tests.documents import scanned_pdf, scribbled_pdf
from tests.search.conftest import digest_folder

HEADER = (
    "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
)


def _row(block: int, line: int, word: int, conf: float, text: str) -> str:
    return f"5\t1\t{block}\t1\t{line}\t{word}\t0\t0\t10\t10\t{conf}\t{text}"


def _result(store: LocalStore, digest: str) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))


def test_lines_tesseract_is_unsure_of_are_left_out_and_a_noisy_page_is_doubtful() -> None:
    rows = [
        _row(1, 1, 1, 96, "Roll"),
        _row(1, 1, 2, 95, "initiative"),
        _row(1, 1, 3, 12, "~"),
        _row(1, 2, 1, 20, "ee"),
        _row(1, 2, 2, 31, "=~"),
    ]
    page = parse_tsv("\n".join([HEADER, *rows]) + "\n")
    assert page.trusted == "Roll initiative ~"
    two_lines = parse_tsv(
        "\n".join([HEADER, _row(1, 1, 1, 90, "initia-"), _row(1, 2, 1, 90, "tive")])
    )
    assert two_lines.trusted == "initiative", "a paragraph's lines are joined"
    assert "=~" in page.text and not page.doubtful
    noisy = parse_tsv("\n".join([HEADER, *rows[3:], _row(2, 1, 1, 90, "A")]) + "\n")
    assert noisy.doubtful and noisy.trusted == "A"
    assert not parse_tsv(HEADER + "\n").doubtful, "a blank page is blank, not doubtful"


def test_the_worded_reading_leaves_out_a_line_of_lone_letters() -> None:
    """An icon beside a logo's lettering reads as a line of lone letters ("P Y"); a line
    with a token of two characters (a number, a word) stays."""
    lines = [["Centre", "for"], ["P", "Y"], ["Music"], ["21"]]
    rows = [
        _row(1, line, word, 90, text)
        for line, texts in enumerate(lines, 1)
        for word, text in enumerate(texts, 1)
    ]
    page = parse_tsv("\n".join([HEADER, *rows]) + "\n")
    assert page.trusted == "Centre for P Y Music 21"
    assert page.worded().trusted == "Centre for Music 21"


def test_a_scribbled_page_gives_its_reading_marked_doubtful_out_of_search_and_a_scan_comes_through(
    tmp_path: Path,
) -> None:
    scribbled_pdf(tmp_path / "in" / "letter.pdf")
    scanned_pdf(tmp_path / "in" / "scan.pdf")
    store = LocalStore(tmp_path / "bucket")
    digests = digest_folder(store, tmp_path / "in")
    with _result(store, digests["letter.pdf"]) as letter:
        names = letter.namelist()
        assert "ocr/0001.doubtful.txt" in names
        page = letter.read("document.md").decode()
        assert "<!--doubtful-->\n> *Doubtful reading (OCR confidence" in page
        assert page.rstrip().endswith("<!--/doubtful-->"), "the page is not empty, and says so"
        assert len(plain_text(page)) > 40
        info = json.loads(letter.read("info.json"))
        assert any("mostly noise" in p and "doubtful" in p for p in info["problems"])
        assert letter.read("chunks.jsonl").decode().strip() == "", "search leaves it out"
        tags = json.loads(letter.read("tags.json")) if "tags.json" in names else []
        assert tags == [], "tags leave it out"
    with _result(store, digests["scan.pdf"]) as scan:
        assert "Roll initiative before every battle" in scan.read("ocr/0001.md").decode()
        assert "ocr/0001.tsv" in scan.namelist()
