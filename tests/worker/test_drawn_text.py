"""Words a born-digital page shows as a picture, with no text layer there, are read and stand
where they stand on the page, with their OCR confidence."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.pagetext import plain_text

BODY = (
    "The committee met in the spring to weigh the yields of the turnip crop against the cost "
    "of bones, and found the crop ten times larger where bones were used. "
)


def _banner() -> bytes:
    """A title banner as a picture: large dark letters on a light ground."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=60)
    page.insert_text((12, 44), "HARVEST FORUM 2026", fontsize=34, fontname="hebo")
    return page.get_pixmap(dpi=150).tobytes("png")


def _poster(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_image(pymupdf.Rect(72, 60, 492, 120), stream=_banner())
    page.insert_textbox(pymupdf.Rect(72, 160, 523, 500), BODY * 8, fontsize=11, fontname="tiro")
    doc.save(path)


def test_a_banner_drawn_as_a_picture_is_read_before_the_text_under_it(tmp_path: Path) -> None:
    source = tmp_path / "poster.pdf"
    _poster(source)
    with pymupdf.open(source) as doc:
        assert "HARVEST" not in doc[0].get_text(), "no text layer over the banner"
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    page = conversion.pages[0]
    assert re.search(r"<!--drawn text, OCR confidence \d+--> HARVEST FORUM 2026", page)
    text = plain_text(page)
    assert text.index("HARVEST FORUM 2026") < text.index("The committee met")


def test_drawn_text_can_be_turned_off(tmp_path: Path) -> None:
    source = tmp_path / "poster.pdf"
    _poster(source)
    options = ConverterOptions(drawn_text=False)
    conversion = convert(source, "pdf", tmp_path / "work", options)
    assert "HARVEST" not in conversion.pages[0]
