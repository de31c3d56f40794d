"""Word spaces in lines whose font's width table lies.

MuPDF puts a space between two glyphs where the pen of the second starts more than a share of
the font size after the first one's advance ends, the advance taken from the PDF's width table.
Some producers write a font (often a bold or display face beside a right regular one) with a
width table that does not match its glyphs and place every glyph with its own move: the page
shows the words spaced, but each claimed advance runs past the next glyph's start, so MuPDF
sees no gap anywhere and "Table 1: Composition of the pretraining data" comes out as
"Table1:Compositionofthepretrainingdata".

Only lines MuPDF reads with a run of letters long enough to be glued words (:data:`GLUED`) are
measured, so that pages of right widths cost nothing: where MuPDF sees some of a lying line's
spaces itself (after a glyph whose claimed width is near its true one) and leaves only short
runs, the line is read as MuPDF reads it.

Such a line shows itself by its advance boxes: they overlap their successors (by a tenth of
an em and more, on most of the line), which true widths never do. Its word gaps are then
measured from the font program's own advances: from where a glyph's true advance ends to where
the next one's pen starts, a gap over :data:`~.rtl.WORD_GAP` of the font size is a space, as
for Korean. Lines of other fonts, and fonts whose program cannot be read, are left as MuPDF
gives them.
"""

from __future__ import annotations

import itertools
import re
import statistics
from typing import Any

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.rtl import WORD_GAP, Char

_UNSPACED_SCRIPTS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff\u31f0-\u31ff"  # kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables (their spaces are :mod:`.hangul`'s)
)
GLUED = re.compile(rf"[^\W\d_{_UNSPACED_SCRIPTS}]{{15,}}")
"""A run of letters long enough that it may be words without their spaces: only lines holding
one are measured (a text check on the page first, so other pages cost nothing). Letters of
scripts written without word spaces never make one: their lines are long runs by nature."""
OVERLAP = 0.1
"""How far (a share of the font size) a glyph's claimed advance runs past the next glyph's
start, at the median of the line, for the line's widths to be taken as lying."""
_BASE14 = {
    "Courier", "Courier-Bold", "Courier-BoldOblique", "Courier-Oblique", "Helvetica",
    "Helvetica-Bold", "Helvetica-BoldOblique", "Helvetica-Oblique", "Times-Roman",
    "Times-Bold", "Times-BoldItalic", "Times-Italic", "Symbol", "ZapfDingbats",
}  # fmt: skip
_SUBSET = re.compile(r"^[A-Z]{6}\+")


class FontPrograms:
    """The fonts of a page as programs, by the name its spans give (subset prefix aside):
    embedded ones from their bytes, the 14 standard ones by name; loaded on first use."""

    def __init__(self, page: pymupdf.Page) -> None:
        self._page = page
        self._fonts: dict[str, pymupdf.Font | None] | None = None

    def __getitem__(self, name: str) -> pymupdf.Font | None:
        if self._fonts is None:
            self._fonts = {}
            doc = self._page.parent
            for xref, _, _, basefont, _, _ in self._page.get_fonts():
                self._fonts.setdefault(_SUBSET.sub("", basefont), _program(doc, xref, basefont))
        return self._fonts.get(_SUBSET.sub("", name))


def _program(doc: pymupdf.Document, xref: int, basefont: str) -> pymupdf.Font | None:
    try:
        buffer = doc.extract_font(xref)[3]
        if buffer:
            return pymupdf.Font(fontbuffer=buffer)
        name = _SUBSET.sub("", basefont)
        return pymupdf.Font(name) if name in _BASE14 else None
    except (RuntimeError, ValueError):
        return None


def _lies(chars: list[Char], size: float) -> bool:
    overlaps = [
        char["bbox"][2] - following["origin"][0]
        for char, following in itertools.pairwise(chars)
        if not char["c"].isspace() and not following["c"].isspace()
    ]
    return len(overlaps) >= 4 and statistics.median(overlaps) > OVERLAP * size


def space_by_true_widths(line: dict[str, Any], fonts: FontPrograms) -> bool:
    """Give a horizontal line set in a font whose width table lies its word spaces (see the
    module): a space character goes after each character a word gap follows. Whether any span
    of the line lied."""
    if line.get("dir", (1, 0)) != (1, 0):
        return False
    lied = False
    for span in line["spans"]:
        chars: list[Char] = span["chars"]
        size = float(span["size"])
        if not GLUED.search("".join(c["c"] for c in chars)) or not _lies(chars, size):
            continue
        lied = True
        font = fonts[span["font"]]
        if font is None:
            continue
        spaced: list[Char] = []
        for char, following in zip(chars, [*chars[1:], None], strict=True):
            spaced.append(char)
            if following is None or char["c"].isspace() or following["c"].isspace():
                continue
            advance = font.glyph_advance(ord(char["c"][0])) * size
            if advance <= 0:
                continue  # no glyph for it in the program: no measure
            end = char["origin"][0] + advance
            if following["origin"][0] - end > WORD_GAP * size:
                _, y0, _, y1 = char["bbox"]
                gap = (end, y0, following["origin"][0], y1)
                spaced.append({**char, "c": " ", "bbox": gap, "origin": (end, char["origin"][1])})
        span["chars"] = spaced
    return lied
