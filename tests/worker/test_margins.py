"""Running lines on documents of one page: told by what a reader sees (a line set apart in the
top or bottom band, smaller or in another face, a page number, a stamp), never the page's
first heading or last paragraph."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.margins import with_running_blocks
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

BODY = (
    "The committee met in the spring to weigh the yields of the turnip crop against the cost "
    "of bones, and found the crop ten times larger where bones were used. "
)
STAMP = "Downloaded from example.org at 10:32 on 3 May 2024"
HEAD = "Journal of Field Trials 12 (2021)"
LAST = "The committee thanks the farmers of the district for their patience."


def _one_page(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 40), HEAD, fontsize=8, fontname="helv")
    page.insert_text((72, 110), "Turnips and Bones", fontsize=18, fontname="tibo")
    box = pymupdf.Rect(72, 130, 523, 600)
    page.insert_textbox(box, BODY * 12, fontsize=11, fontname="tiro")
    page.insert_text((72, 640), LAST, fontsize=11, fontname="tiro")
    page.insert_text((290, 790), "7", fontsize=9, fontname="tiro")
    page.insert_text((72, 815), STAMP, fontsize=7, fontname="helv")
    doc.save(path)


@pytest.mark.parametrize("plain_pages", [True, False], ids=["text-layer", "layout-model"])
def test_a_one_page_document_loses_its_running_lines_and_keeps_its_title_and_last_line(
    tmp_path: Path, plain_pages: bool
) -> None:
    source = tmp_path / "report.pdf"
    _one_page(source)
    options = ConverterOptions(plain_pages=plain_pages)
    conversion = convert(source, "pdf", tmp_path / "work", options)
    assert conversion.engines == (("text",) if plain_pages else ("layout",))
    text = plain_text(conversion.pages[0])
    assert "Turnips and Bones" in text
    assert LAST in text
    for running in (HEAD, STAMP, "Downloaded"):
        assert running not in text
    kept = conversion.running[0]
    assert HEAD in " ".join(kept.header)
    assert STAMP in " ".join(kept.footer) and "7" in kept.footer


def test_a_last_paragraph_the_model_marked_as_a_foot_goes_back_to_the_text(
    tmp_path: Path,
) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 100, 523, 700), BODY * 14, fontsize=11, fontname="tiro")
    page.insert_text((72, 800), LAST, fontsize=11, fontname="tiro")
    markdown = f"{BODY * 14}\n\n<!--running footer--> {LAST}\n"
    assert with_running_blocks(page, markdown) == f"{BODY * 14}\n\n{LAST}\n"


def test_a_letters_sender_block_in_the_top_band_stays_in_the_text(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    sender = ["Bern University of Applied Sciences", "Institute of Examples"]
    for number, line in enumerate(sender):
        page.insert_text((350, 50 + 10 * number), line, fontsize=8, fontname="helv")
    for number, line in enumerate(["Max Example", "Street 1", "3000 Bern"]):
        page.insert_text((350, 90 + 10 * number), line, fontsize=8, fontname="helv")
    page.insert_textbox(pymupdf.Rect(72, 200, 523, 600), BODY * 10, fontsize=11, fontname="tiro")
    markdown = "\n\n".join([*sender, "Max Example Street 1 3000 Bern", BODY * 10])
    assert with_running_blocks(page, markdown) == markdown


def test_running_lines_the_model_missed_are_marked_from_the_page(tmp_path: Path) -> None:
    source = tmp_path / "report.pdf"
    _one_page(source)
    body = BODY * 12
    markdown = "\n\n".join([HEAD, "# Turnips and Bones", body, LAST, "7", STAMP])
    with pymupdf.open(source) as doc:
        marked = with_running_blocks(doc[0], markdown)
    assert marked.split("\n\n") == [
        f"<!--running header--> {HEAD}",
        "# Turnips and Bones",
        body,
        LAST,
        "<!--running footer--> 7",
        f"<!--running footer--> {STAMP}",
    ]


@pytest.mark.parametrize("angle", [90, 270])
@pytest.mark.parametrize("plain_pages", [True, False], ids=["text-layer", "layout-model"])
def test_a_stamp_turned_along_a_side_margin_goes_to_the_running_lines(
    tmp_path: Path, angle: int, plain_pages: bool
) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), "Turnips and Bones", fontsize=18, fontname="tibo")
    page.insert_textbox(pymupdf.Rect(72, 130, 523, 600), BODY * 12, fontsize=11, fontname="tiro")
    page.insert_text((72, 640), LAST, fontsize=11, fontname="tiro")
    side = (30, 700) if angle == 90 else (565, 150)
    page.insert_text(side, STAMP, fontsize=7, fontname="helv", rotate=angle)
    doc.save(tmp_path / "stamped.pdf")

    options = ConverterOptions(plain_pages=plain_pages)
    conversion = convert(tmp_path / "stamped.pdf", "pdf", tmp_path / "work", options)

    assert "Downloaded" not in conversion.pages[0]
    assert conversion.running[0].footer == [STAMP]
    assert LAST in plain_text(conversion.pages[0])
