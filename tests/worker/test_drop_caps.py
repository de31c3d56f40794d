"""A paragraph opening with a large initial letter reads with the letter at the front of its
first word, not elsewhere in the text."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

LINES = [
    "ver the past three decades the number of non-governmental organisa-",
    "tions working in the region has grown tenfold, and their budgets with",
    "them. This paper asks what the growth has meant for the villages.",
]
FOLLOWING = (
    "The second paragraph has no initial and runs on as usual, set in the same face and size "
    "as the first one, and closes the section with a plain full stop."
)


def _paper(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 140), "Introduction", fontsize=14, fontname="tibo")
    page.insert_text((72, 196), "O", fontsize=40, fontname="tiro")
    for number, line in enumerate(LINES):
        page.insert_text((104, 172 + 13 * number), line, fontsize=11, fontname="tiro")
    page.insert_textbox(pymupdf.Rect(72, 215, 523, 400), FOLLOWING, fontsize=11, fontname="tiro")
    doc.save(path)


@pytest.mark.parametrize("plain_pages", [True, False], ids=["defaults", "layout-model"])
def test_a_drop_cap_starts_its_paragraphs_first_word(tmp_path: Path, plain_pages: bool) -> None:
    source = tmp_path / "paper.pdf"
    _paper(source)
    conversion = convert(
        source, "pdf", tmp_path / "work", ConverterOptions(plain_pages=plain_pages)
    )
    text = plain_text(conversion.pages[0])
    assert "Over the past three decades the number of non-governmental" in text
    assert " O " not in f" {text} " and "organisaO" not in text
    assert text.index("Introduction") < text.index("Over the past") < text.index("The second")
