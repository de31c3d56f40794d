"""Right-to-left text (Arabic, Persian): words keep their spaces, numbers and ligatures their
order, as a reader of the page sees them; and the word counts behind the converter's own
quality check (and the benchmark's recall) read a word as a reader does."""

# ruff: noqa: RUF001 - Arabic letters are what this file is about, not look-alikes of Latin ones
from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text, word_counts
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.rtl import line_text
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import page_text

SIZE = 14
ARABIC_SCRIPT = 6
"""MuPDF's script number for Arabic: ``Font(script=6)`` is the Noto Naskh Arabic PyMuPDF
ships."""

WORDS = ["ﻛﺎﻥ", "ﻫﻨﺎﻙ", "١٩", "ﻻ"]
"""كان هناك ١٩ لا in presentation forms (one glyph each, as typeset), with a lam-alef
ligature; the digits are written left to right."""


def arabic_pdf(path: Path, lines: list[list[str]]) -> Path:
    """A page with each line typeset right to left, words apart by a gap and no space
    character between them (as XeTeX and many other producers draw Arabic)."""
    font = pymupdf.Font(script=ARABIC_SCRIPT)
    doc = pymupdf.open()
    page = doc.new_page()
    writer = pymupdf.TextWriter(page.rect)
    for number, words in enumerate(lines):
        y, x = 100 + 30 * number, 500.0
        for word in words:
            widths = [font.text_length(char, fontsize=SIZE) for char in word]
            if word[0].isdigit():
                x -= sum(widths)
                left = x
                for char, width in zip(word, widths, strict=True):
                    writer.append((left, y), char, font=font, fontsize=SIZE)
                    left += width
            else:
                for char, width in zip(word, widths, strict=True):
                    x -= width
                    writer.append((x, y), char, font=font, fontsize=SIZE)
            x -= 0.3 * SIZE
    writer.write_text(page)
    doc.save(path)
    return path


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_arabic_words_keep_their_spaces_and_numbers_their_order(tmp_path: Path, mode: str) -> None:
    source = arabic_pdf(tmp_path / "arabic.pdf", [WORDS, ["ﻣﻦ", "ﺍﻟﻤﺌﺎﺕ"]])
    assert "ﻙﺎﻨﻫﻥﺎﻛ" in pymupdf.open(source)[0].get_text()  # MuPDF alone: glued, reversed

    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode=mode))

    text = plain_text(conversion.pages[0])
    assert text.split() == ["كان", "هناك", "١٩", "لا", "من", "المئات"]
    assert not conversion.problems
    assert page_text(pymupdf.open(source)[0]).split() == text.split()


def _glyph(char: str, x0: float, x1: float) -> dict:
    return {"c": char, "bbox": (x0, 90.0, x1, 104.0), "origin": (x0, 100.0)}


def test_a_line_reads_the_same_whatever_order_the_glyphs_come_in() -> None:
    """Right to left: kaf-alef-noon, a gap, then "12" in a left-to-right run, a gap, then ba
    with a kasra mark on it; MuPDF gives glyphs in drawing order, logical or visual."""
    glyphs = [
        _glyph("ﻛ", 90, 100),
        _glyph("ﺎ", 85, 90),
        _glyph("ﻥ", 78, 85),
        _glyph("1", 60, 66),
        _glyph("2", 66, 72),
        _glyph("ﺏ", 45, 54),
    ]
    kasra = _glyph("\u0650", 48, 48)
    expected = "كان 12 بِ"
    shuffled = glyphs[:]
    random.Random(3).shuffle(shuffled)
    for order in (glyphs, glyphs[::-1], shuffled):
        with_mark = [*order]
        with_mark.insert(with_mark.index(glyphs[5]) + 1, kasra)
        assert line_text(with_mark, SIZE) == expected


def test_a_space_drawn_over_its_letters_is_no_word_break() -> None:
    """Persian's zero-width non-joiner ("نمونه‌ی") comes out of XeTeX as a space glyph that
    overlaps the letters: one word. A real gap is a word break, space glyph or not."""
    joined = [_glyph("ﻧ", 90, 96), _glyph("ﻪ", 84, 90), _glyph(" ", 84, 87), _glyph("ﯼ", 78, 84)]
    assert line_text(joined, SIZE) == "نهی"
    apart = [_glyph("ﻧ", 90, 96), _glyph("ﻪ", 84, 90), _glyph("ﯼ", 70, 76)]
    assert line_text(apart, SIZE) == "نه ی"


def test_plain_text_keeps_code_and_word_counts_read_forms_as_letters() -> None:
    code = "camera { location <10.0, 10, -10.0> right x*image_width/image_height }"
    assert plain_text(code) == code
    assert plain_text("a <br> b **bold** and _it_ <span class='x'>c</span>") == "a b bold and it c"
    assert word_counts("ﬁle ﻛﺎﻥ") == word_counts("file كان")
    assert list(word_counts("يونِكود हिन्दी")) == ["يونِكود", "हिन्दी"]  # marks inside words


def test_a_mark_misread_as_a_greek_letter_is_dropped() -> None:
    """One Arabic font's hamza comes out of MuPDF as a zero-width Greek capital zeta."""
    glyphs = [_glyph("ﺍ", 94, 100), _glyph("\u0396", 96, 96), _glyph("ﻥ", 86, 94)]
    assert line_text(glyphs, SIZE) == "ان"
