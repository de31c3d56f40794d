"""Word spaces and character order in right-to-left lines (Arabic, Persian, Hebrew).

MuPDF turns a right-to-left line into reading order itself, but three things go wrong there,
seen on the Arabic and Persian PDFs of our real-world corpus:

- It finds the space between two words from the gap between their glyphs when the PDF draws
  no space character, but only when the glyphs run left to right: "كان هناك" comes out as one
  word, "كانهناك" (about half the words of those PDFs were glued so).
- Numbers and Latin words inside the line come out reversed ("١٣٩٧" as "٧٩٣١"), and a ligature
  expanded into its letters (lam-alef "ﻻ") has them in reverse ("ال" for "لا").
- pymupdf4llm orders the spans of a line from left to right: a right-to-left line's spans come
  out in reverse.

So while converting (see :mod:`.word_spaces`), a line with right-to-left text becomes one span
whose text is made here, from the glyphs as a text page with ligatures kept and boxes by
advance width gives them (ink boxes make gaps inside words): ordered by their places on the
line, as the Unicode bidirectional algorithm would have laid them out (MuPDF's own order is
visual on some pages, logical on others), a space wherever two glyphs are more than
:data:`WORD_GAP` of the font size apart (poppler's rule for a word break), and in NFKC form
(presentation forms and ligatures as their letters, as the Markdown of other lines has them).
Pages without right-to-left text are left as MuPDF gives them.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pymupdf

WORD_GAP = 0.1
"""A gap between two glyphs wider than this share of the font size is a word break
(``minWordBreakSpace`` in poppler's text output)."""

RTL_TEXT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
"""Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms; Arabic-Indic digits,
which MuPDF puts in reverse like the letters around them, are in this range too."""


Char = dict[str, Any]

_EXTRACT_RAWDICT = pymupdf.TextPage.extractRAWDICT

_STRONG = {"L": "ltr", "EN": "ltr", "AN": "ltr", "R": "rtl", "AL": "rtl"}
"""Which way a character is written, by its bidirectional class: digits (Arabic-Indic ones
too) run left to right even inside a right-to-left line; other classes are neutral."""

_GLYPHS = (pymupdf.TEXTFLAGS_RAWDICT | pymupdf.TEXT_PRESERVE_LIGATURES) & ~(
    pymupdf.TEXT_ACCURATE_BBOXES | pymupdf.TEXT_PRESERVE_IMAGES
)
"""The text page right-to-left lines are made from: one character per glyph for ligatures,
boxes by advance width."""


def _zero_width(char: Char) -> bool:
    x0, _, x1, _ = char["bbox"]
    return x1 - x0 <= 0.01 or unicodedata.category(char["c"]) in ("Mn", "Me", "Cf")


@dataclass
class _Cluster:
    """A glyph with the marks drawn on it (a zero-width glyph belongs to the one before)."""

    chars: list[Char]
    direction: str | None

    @property
    def base(self) -> Char:
        return self.chars[0]

    @property
    def centre(self) -> float:
        return (self.base["bbox"][0] + self.base["bbox"][2]) / 2


def _clusters(chars: list[Char]) -> list[_Cluster]:
    """The glyphs as clusters, without spaces; a zero-width Latin or Greek letter on a
    right-to-left letter is dropped: it is a mark whose font names it wrongly (MuPDF reads the
    hamza of "أنظمة" in one Arabic font as a Greek capital zeta), which no reader sees as a
    letter."""
    clusters: list[_Cluster] = []
    for char in chars:
        if char["c"].isspace():
            continue
        if clusters and _zero_width(char):
            misread = unicodedata.bidirectional(char["c"]) == "L"
            if not (misread and clusters[-1].direction == "rtl"):
                clusters[-1].chars.append(char)
        else:
            clusters.append(_Cluster([char], _STRONG.get(unicodedata.bidirectional(char["c"]))))
    return clusters


def _reading_order(clusters: list[_Cluster]) -> list[_Cluster]:
    """From the glyphs' places alone (MuPDF's order is sometimes visual, sometimes logical):
    the line's direction is its letters' majority; in a right-to-left line the glyphs are
    read from right to left except runs of left-to-right ones (and the neutral characters
    between two of them: "3.1", an e-mail address), and the other way round."""
    strong = [c.direction for c in clusters if c.direction]
    base = "rtl" if strong.count("rtl") > strong.count("ltr") else "ltr"
    other = "ltr" if base == "rtl" else "rtl"
    visual = sorted(clusters, key=lambda c: c.centre, reverse=base == "rtl")
    sides = [c.direction for c in visual]
    for n, side in enumerate(sides):
        if side is None:
            before = next((d for d in reversed(sides[:n]) if d), base)
            after = next((d for d in sides[n + 1 :] if d), base)
            sides[n] = other if before == after == other else base
    ordered: list[_Cluster] = []
    run: list[_Cluster] = []
    for cluster, side in zip([*visual, None], [*sides, None], strict=True):
        if side == other:
            run.append(cluster)  # type: ignore[arg-type]
            continue
        ordered.extend(reversed(run))
        run = []
        if cluster is not None:
            ordered.append(cluster)
    return ordered


def _gap(before: Char, after: Char) -> float:
    """The horizontal space between two glyphs, whichever side ``after`` is on."""
    return max(before["bbox"][0] - after["bbox"][2], after["bbox"][0] - before["bbox"][2])


def line_text(chars: list[Char], size: float) -> str:
    """The text of a line with right-to-left letters, from its glyphs: in reading order (see
    :func:`_reading_order`), in NFKC form, and a space wherever two glyphs are more than
    :data:`WORD_GAP` of ``size`` apart. Space characters do not count: Persian's zero-width
    non-joiner inside a word ("نمونه‌ی") comes out of XeTeX as a space drawn over its letters."""
    text: list[str] = []
    previous: Char | None = None
    for cluster in _reading_order(_clusters(chars)):
        if previous is not None and _gap(previous, cluster.base) > WORD_GAP * size:
            text.append(" ")
        previous = cluster.base
        text.extend(char["c"] for char in cluster.chars)
    return unicodedata.normalize("NFKC", "".join(text))


def _origin(char: Char) -> tuple[float, float]:
    return round(char["origin"][0], 1), round(char["origin"][1], 1)


@dataclass
class Glyphs:
    """A page's glyphs in MuPDF's order (see :data:`_GLYPHS`), findable by their origin (a
    mark has its letter's origin, so an origin may hold several)."""

    chars: list[Char]
    places: dict[tuple[float, float], list[int]]

    @classmethod
    def of(cls, page: pymupdf.Page) -> Glyphs:
        chars: list[Char] = []
        places: dict[tuple[float, float], list[int]] = defaultdict(list)
        for block in _EXTRACT_RAWDICT(page.get_textpage(flags=_GLYPHS))["blocks"]:
            for line in block.get("lines", ()):
                for span in line["spans"]:
                    for char in span["chars"]:
                        places[_origin(char)].append(len(chars))
                        chars.append(char)
        return cls(chars, places)

    def at(self, chars: list[Char]) -> list[Char]:
        """The glyphs drawn where ``chars`` are, in MuPDF's order."""
        found = {place for char in chars for place in self.places.get(_origin(char), ())}
        return [self.chars[place] for place in sorted(found)]


def merge_rtl_line(line: dict[str, Any], glyphs: Glyphs) -> bool:
    """Make a line with right-to-left text one span in reading order, with its word spaces;
    whether the line has such text."""
    spans = line["spans"]
    chars = [char for span in spans for char in span["chars"]]
    if not chars or not RTL_TEXT.search("".join(c["c"] for c in chars)):
        return False
    main = max(spans, key=lambda span: len(span["chars"]))
    bbox = pymupdf.Rect(spans[0]["bbox"])
    for span in spans[1:]:
        bbox |= span["bbox"]
    merged = {**main, "bbox": tuple(bbox), "origin": spans[0]["origin"], "chars": chars}
    merged["text"] = line_text(glyphs.at(chars) or chars, main["size"])
    line["spans"] = [merged]
    return True
