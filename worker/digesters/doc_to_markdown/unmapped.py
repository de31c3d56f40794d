"""Glyphs a page's fonts map to no character, and pages whose text layer is made of them.

A font without Unicode for its glyphs (no ``ToUnicode`` map, glyph names no list knows: a
Type 3 font of an old TeX file or of a scanner, a legacy Arabic or Indic font, a symbol font
of boxes and ornaments) gives MuPDF the glyphs' codes, which :func:`.tidy.tidy` turns into
U+FFFD. A reader sees a box, search and tags a word that is none; ``pdftotext`` leaves them
out, and so does :func:`legible`.

On some pages they are much of the text and what maps is no text either: a legacy font's
codes that do map are Latin-1 symbols and stray letters (``T`§rK`` for Arabic words), a Type 3
font's map to nothing. That text layer does not say what the page prints. Such a page keeps
its images and loses its text, and page-ocr, which reads the pages that have no text, reads it
from its pixels (:func:`unreadable`). A page whose other text reads as words (a manual boxing
its examples in a symbol font's rules) keeps it.
"""

from __future__ import annotations

import re

from bucketdigest.shared.pagetext import image_links, plain_text
from bucketdigest.worker.digesters.doc_to_markdown.scanned import WORD_SHARE, word_share

UNMAPPED = "\ufffd"
UNREADABLE = 0.3
"""A page whose text is this share of unmapped glyphs or more may be unreadable (see
:func:`unreadable`). On the real-world corpus the pages with most were a custom-encoded Arabic
page (0.40, and 0.17 of the rest words), an Arabic word-art page (0.55, no words) and a Type 3
font's (1.0, nothing else); a Japanese manual boxing its examples in a symbol font's rules had
0.25."""
LATIN_END = 0x250
"""Letters below this code point are Latin (Basic, Supplement, Extended-A and -B): what a
legacy font's codes map to."""

_RUN = re.compile(f"([ \\t]*){UNMAPPED}+([ \\t]*)")
"""A run of unmapped glyphs with the spaces either side of it (see :func:`_dropped`)."""
_ONLY_MARKS = re.compile(r"^[ \t]*(?:#{1,6}|[-*+]|>)[ \t]*$")
"""A line left with nothing but a heading's, an item's or a quote's mark."""


def unmapped_share(text: str) -> float:
    """The share of ``text``'s characters (but spaces) that are unmapped glyphs."""
    solid = "".join(text.split())
    return solid.count(UNMAPPED) / len(solid) if solid else 0.0


def unreadable(markdown: str) -> bool:
    """Whether a page's text layer does not say what it prints: :data:`UNREADABLE` of its text
    (without Markdown syntax) or more is unmapped glyphs, and the rest is nothing, or Latin
    letters and symbols that mostly read as no words (:func:`.scanned.word_share`). Text in
    another script is left be: it is what the page prints, among the glyphs."""
    if UNMAPPED not in markdown:
        return False
    text = plain_text(markdown)
    if unmapped_share(text) < UNREADABLE:
        return False
    rest = text.replace(UNMAPPED, " ")
    letters = [character for character in rest if character.isalpha()]
    if not letters:
        return True
    latin = sum(ord(character) < LATIN_END for character in letters)
    return latin > len(letters) / 2 and word_share(rest) < WORD_SHARE


def legible(markdown: str) -> str:
    """The page without its unmapped glyphs, or, when it is :func:`unreadable`, its image
    links alone."""
    if UNMAPPED not in markdown:
        return markdown
    if unreadable(markdown):
        return "\n\n".join(image_links(markdown))
    lines = []
    for line in markdown.split("\n"):
        if UNMAPPED in line:
            line = _RUN.sub(_dropped, line)
            if _ONLY_MARKS.match(line):
                continue
        lines.append(line)
    return "\n".join(lines)


def _dropped(run: re.Match[str]) -> str:
    """What stands where a run of unmapped glyphs stood: the spaces before it at a line's
    start (an indent is syntax), nothing at its end, else the spaces on one side (a word of
    them leaves one space between its neighbours, not two)."""
    before, after = run[1], run[2]
    if run.start() == 0:
        return before
    if run.end() == len(run.string):
        return ""
    return before or after
