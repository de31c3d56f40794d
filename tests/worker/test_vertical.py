"""Japanese set in vertical lines (tategaki) reads column by column, right to left, with ruby
left out of the text."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

COLUMNS = ["人は死して名を残す", "漢字の部首には偏と冠がある", "この噂好きな人は懐具合もよく"]
RUBY = {0: "ひと", 2: "うわさ"}


def _tategaki(path: Path) -> None:
    """Each character placed on its own, one column under the other, right to left, as
    vertical Japanese PDFs hold them; ruby at half size beside the first characters."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    size = 12
    for number, column in enumerate(COLUMNS):
        x = 500 - number * 2 * size
        for row, char in enumerate(column):
            page.insert_text((x, 100 + row * size), char, fontsize=size, fontname="japan")
        for row, char in enumerate(RUBY.get(number, "")):
            page.insert_text(
                (x + size, 96 + row * size / 2), char, fontsize=size / 2, fontname="japan"
            )
    page.insert_text((290, 800), "1", fontsize=9)
    doc.save(path)


def test_vertical_columns_read_top_to_bottom_right_to_left_without_ruby(tmp_path: Path) -> None:
    source = tmp_path / "tategaki.pdf"
    _tategaki(source)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert conversion.engines == ("vertical",)
    text = plain_text(conversion.pages[0])
    for column in COLUMNS:
        assert column in text
    assert text.index(COLUMNS[0]) < text.index(COLUMNS[1]) < text.index(COLUMNS[2])
    assert "ひと" not in text and "うわさ" not in text
    assert conversion.running[0].footer == ["1"]
