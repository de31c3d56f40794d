"""Korean words keep the spaces a reader sees between them when the PDF draws none (XeTeX moves
the pen instead), while Chinese and Japanese lines, whose gaps are no word breaks, stay as
they are."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import page_text

SIZE = 12
KOREAN = ["그밖의", "사항들은", "판면", "설정을", "위한", "fapapersize", "(2024)"]
CHINESE = ["中文排版", "的基本", "要求"]
"""A Chinese line justified with gaps between its characters' groups: no word breaks."""


def gapped_pdf(path: Path, lines: list[list[str]]) -> Path:
    """A page with each line's words drawn apart by a third of the font size and no space
    character between them."""
    font = pymupdf.Font("korea")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="cjk", fontbuffer=font.buffer)
    for number, words in enumerate(lines):
        x, y = 72.0, 100 + 30 * number
        for word in words:
            page.insert_text((x, y), word, fontname="cjk", fontsize=SIZE)
            x += font.text_length(word, fontsize=SIZE) + SIZE / 3
    doc.save(path)
    return path


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_korean_words_are_spaced_as_drawn(tmp_path: Path, mode: str) -> None:
    source = gapped_pdf(tmp_path / "korean.pdf", [KOREAN, CHINESE])
    assert "그밖의사항들은판면" in pymupdf.open(source)[0].get_text()  # MuPDF alone: glued

    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode=mode))

    text = plain_text(conversion.pages[0])
    assert " ".join(KOREAN) in text
    assert "".join(CHINESE) in text
    assert page_text(pymupdf.open(source)[0]).split() == [*KOREAN, "".join(CHINESE)]
