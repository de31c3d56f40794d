"""A paragraph opening with a large initial letter reads with the letter at the front of its
first word, not elsewhere in the text."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.drop_caps import joined_drop_caps
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


def test_the_letter_joins_the_first_word_but_not_its_box() -> None:
    """asaetr.pdf p.1: the layout model drew a header region round the initial T; the first
    word, its box stretched over the letter's, fell in that region and read as a heading
    ("#### This") below the rest of its line. The word keeps its own box; the line starts at
    the letter, as the paragraph's other lines do."""

    def line(bbox: tuple[float, ...], text: str, size: float) -> dict[str, object]:
        span = {"text": text, "size": size, "bbox": bbox}
        return {"bbox": bbox, "dir": (1.0, 0.0), "spans": [span]}

    body = [
        line((103, 320 + 12 * n, 315, 329 + 12 * n), "structs someone on it", 9) for n in range(4)
    ]
    page = {
        "blocks": [
            {"lines": [line((72, 309, 101, 338), "T", 42.8)]},
            {"lines": [line((103, 309, 315, 318), "his document, when", 9), *body]},
        ]
    }
    joined_drop_caps(page)
    (block,) = page["blocks"]
    first = block["lines"][0]
    assert first["spans"][0]["text"] == "This document, when"
    assert first["spans"][0]["bbox"] == (103, 309, 315, 318)
    assert first["bbox"] == (72, 309, 315, 318)
