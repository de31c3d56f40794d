"""Word spaces in Korean lines.

Korean separates its words with spaces, but a PDF often draws none: XeTeX (xdvipdfmx) and
many other producers move the pen instead. MuPDF infers a space from such a gap only between
letters of alphabetic scripts: it never puts one next to a CJK character (right for Chinese
and Japanese, whose justified lines have gaps inside words), and Hangul counts as CJK there.
So "그밖의 사항들" came out as "그밖의사항들" and "위한 fapapersize" as "위한fapapersize":
about half the words of the Korean PDFs of our real-world corpus were glued so.

Here a space goes wherever a Hangul syllable or jamo meets a glyph that is not Chinese or
Japanese more than :data:`~.rtl.WORD_GAP` of the font size apart, measured between advance
boxes (ink boxes have gaps inside words): from where one glyph's advance ends to where the
next one's pen starts. Lines without Hangul are left as MuPDF gives them.
"""

from __future__ import annotations

import re
from typing import Any

from bucketdigest.worker.digesters.doc_to_markdown.rtl import WORD_GAP, Char, Glyphs

HANGUL_TEXT = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff]")
"""Hangul syllables, jamo and compatibility jamo."""

_CHINESE_OR_JAPANESE = re.compile(
    "[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)
"""Han ideographs, kana, CJK punctuation and full-width forms: scripts whose lines have no
word spaces, so a gap next to them is no word break."""


def _breakable(before: str, after: str) -> bool:
    if before.isspace() or after.isspace():
        return False
    if not (HANGUL_TEXT.match(before) or HANGUL_TEXT.match(after)):
        return False
    return not (_CHINESE_OR_JAPANESE.match(before) or _CHINESE_OR_JAPANESE.match(after))


def _advance_end(char: Char, glyphs: Glyphs) -> float:
    """Where ``char``'s advance ends: its box in the advance-box text page, else its own."""
    drawn = [glyph for glyph in glyphs.at([char]) if glyph["c"] == char["c"]]
    return float((drawn[0] if drawn else char)["bbox"][2])


def _space(before: Char, end: float, after: Char) -> Char:
    """A space character filling the gap from ``end`` to where ``after`` starts."""
    _, y0, _, y1 = before["bbox"]
    return {
        **before,
        "c": " ",
        "bbox": (end, y0, after["origin"][0], y1),
        "origin": (end, before["origin"][1]),
    }


def space_hangul_line(line: dict[str, Any], glyphs: Glyphs) -> None:
    """Give a horizontal line with Hangul its word spaces: a space character goes after any
    character a word gap follows (see the module), in the span of that character."""
    if line.get("dir", (1, 0)) != (1, 0):
        return
    spans = line["spans"]
    chars = [(span, char) for span in spans for char in span["chars"]]
    if not HANGUL_TEXT.search("".join(char["c"] for _, char in chars)):
        return
    spaced: dict[int, list[Char]] = {id(span): [] for span in spans}
    for (span, char), (_, following) in zip(chars, [*chars[1:], (None, None)], strict=True):
        spaced[id(span)].append(char)
        if following is None or not _breakable(char["c"], following["c"]):
            continue
        end = _advance_end(char, glyphs)
        if following["origin"][0] - end > WORD_GAP * span["size"]:
            spaced[id(span)].append(_space(char, end, following))
    for span in spans:
        span["chars"] = spaced[id(span)]
