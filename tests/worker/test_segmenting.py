"""A page strewn with vector paths (a vectorised scan, a map) is converted without the text
segmenting that would take minutes over it; ordinary pages keep it. (What the layout model
reads a page with is recorded where it makes its text page, beneath the converter's bound.)"""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest
from pymupdf.layout import pymupdf_util_base

from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

SENTENCE = "The ferry leaves the north quay at dawn and returns before the tide turns"


def _page_with_marks(doc: pymupdf.Document, marks: int) -> None:
    page = doc.new_page()
    for line in range(40):
        page.insert_text((60, 70 + line * 17), f"{SENTENCE} {line}.", fontsize=9)
    dots = random.Random(marks)
    shape = page.new_shape()
    for _ in range(marks):
        x, y = dots.uniform(450, 580), dots.uniform(20, 820)  # beside the text
        shape.draw_rect(pymupdf.Rect(x, y, x + dots.uniform(0.5, 3), y + dots.uniform(0.5, 3)))
        shape.finish(fill=(0, 0, 0), color=None)
    shape.commit()


def test_a_page_strewn_with_paths_is_read_without_segmenting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = pymupdf.open()
    _page_with_marks(doc, 1500)  # segmented: 2.3 s to convert, not 0.5 s; 18,560 paths: 164 s
    _page_with_marks(doc, 20)
    source = tmp_path / "strewn.pdf"
    doc.save(source)
    segmented: list[bool] = []
    create = pymupdf_util_base.create_stext_page

    def recorded(page: pymupdf.Page, flags: int) -> pymupdf.TextPage:
        segmented.append(bool(flags & pymupdf.TEXT_SEGMENT))
        return create(page, flags)

    monkeypatch.setattr(pymupdf_util_base, "create_stext_page", recorded)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert segmented == [False, True]
    for page in conversion.pages:
        assert f"{SENTENCE} 39." in page
