"""Pages set in vertical lines (Japanese tategaki, classical Chinese): read top to bottom,
columns right to left.

MuPDF gives such a page as one "line" per character (or a few), which the converter writes one
per line, so a phrase is never found and the page cannot be read. Here the page's characters
are put into columns by where they stand; ruby (the small reading aids beside the characters,
furigana and kunten) is left out of the text; columns are read right to left, a band of the page
after the band above it, and a column that starts level with the band's top and follows a full
column goes on the same paragraph. Lines set across the page (a page number, a title in Latin
letters) keep their place by height as paragraphs of their own.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

import pymupdf

VERTICAL_SHARE = 0.45
"""A page is vertical when at least this share of its characters stand in vertical columns."""
MIN_CHARACTERS = 20
MAX_DRAWINGS = 24
"""Vector paths a vertical page may have (rules of a table); more is a figure."""
RUBY = 0.7
"""Characters smaller than this share of the body size are ruby, beside the text."""
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


@dataclass
class _Char:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float

    @property
    def x(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass
class _Column:
    chars: list[_Char] = field(default_factory=list)

    @property
    def x(self) -> float:
        return statistics.median(char.x for char in self.chars)

    @property
    def top(self) -> float:
        return self.chars[0].y0

    @property
    def bottom(self) -> float:
        return self.chars[-1].y1

    @property
    def text(self) -> str:
        return "".join(char.text for char in self.chars)


def _chars(page: pymupdf.Page) -> tuple[list[_Char], list[tuple[float, str]]]:
    """The page's characters from lines set vertically or of one character (or two, one
    under the other), and the other lines (across the page) with their heights."""
    chars, across = [], []
    for block in page.get_text("rawdict", flags=pymupdf.TEXTFLAGS_TEXT)["blocks"]:
        for line in block.get("lines", ()):
            glyphs = [c for span in line["spans"] for c in span["chars"] if c["c"].strip()]
            sizes = [span["size"] for span in line["spans"] for c in span["chars"]]
            if not glyphs:
                continue
            stacked = len(glyphs) == 1 or all(
                b["bbox"][1] >= a["bbox"][3] - 0.25 * (a["bbox"][3] - a["bbox"][1])
                for a, b in itertools.pairwise(glyphs)
            )
            if abs(line["dir"][1]) > 0.9 or (len(glyphs) <= 2 and stacked):
                for glyph, size in zip(glyphs, sizes, strict=False):
                    chars.append(_Char(glyph["c"], *glyph["bbox"], size))
            else:
                text = "".join(c["c"] for span in line["spans"] for c in span["chars"])
                across.append((line["bbox"][1], " ".join(text.split())))
    return chars, across


def _columns(chars: list[_Char], body: float) -> list[_Column]:
    """Characters in columns (by their centre), each top to bottom, cut where a gap of more
    than a character opens."""
    columns: list[_Column] = []
    for char in sorted(chars, key=lambda c: (-c.x, c.y0)):
        column = next(
            (column for column in reversed(columns[-4:]) if abs(column.x - char.x) < 0.4 * body),
            None,
        )
        if column is None:
            columns.append(_Column([char]))
        else:
            column.chars.append(char)
    pieces = []
    for column in columns:
        column.chars.sort(key=lambda c: c.y0)
        piece = _Column([column.chars[0]])
        for char in column.chars[1:]:
            if char.y0 - piece.bottom > 1.2 * body:
                pieces.append(piece)
                piece = _Column([char])
            else:
                piece.chars.append(char)
        pieces.append(piece)
    return pieces


def _body(chars: list[_Char]) -> float:
    """The text's size: the largest size at least a fifth of the characters are set in (ruby
    can outnumber the characters it stands beside, but is half their size)."""
    counts = Counter(round(char.size, 1) for char in chars)
    common = [size for size, count in counts.items() if count >= 0.2 * len(chars)]
    return max(common) if common else statistics.median(char.size for char in chars)


def _layout(page: pymupdf.Page) -> tuple[list[_Column], list[tuple[float, str]], float] | None:
    """The page's main-text columns, its lines across and the body size, or None unless the
    page is mostly vertical text."""
    chars, across = _chars(page)
    cjk = [char for char in chars if _CJK.match(char.text)]
    if len(cjk) < MIN_CHARACTERS:
        return None
    body = _body(cjk)
    main = [char for char in chars if char.size >= RUBY * body]
    columns = _columns(main, body)
    stacked = sum(len(column.chars) for column in columns if len(column.chars) >= 3)
    total = len(main) + sum(len(text) for _, text in across)
    if stacked < VERTICAL_SHARE * total:
        return None
    return columns, across, body


def is_vertical(page: pymupdf.Page) -> bool:
    """Whether ``page`` is set mostly in vertical lines, without pictures or drawings (a
    figure with vertical labels is the layout model's). Pages without Chinese or Japanese
    characters, or without many lines of one or two characters (how MuPDF gives vertical
    text), are passed over at once."""
    lines = [line for line in page.get_text("text").splitlines() if line.strip()]
    short = sum(1 for line in lines if len(line.strip()) <= 2)
    return (
        short >= MIN_CHARACTERS / 2
        and any(_CJK.search(line) for line in lines)
        and not page.get_images(full=False)
        and len(page.get_cdrawings()) <= MAX_DRAWINGS
        and _layout(page) is not None
    )


def _bands(columns: list[_Column], body: float) -> list[list[_Column]]:
    """Columns in bands of the page (sharing height), top band first, each right to left."""
    bands: list[list[_Column]] = []
    for column in sorted(columns, key=lambda c: c.top):
        band = next(
            (
                band
                for band in bands
                if column.top < max(c.bottom for c in band) - 0.5 * body
                and column.bottom > min(c.top for c in band) + 0.5 * body
            ),
            None,
        )
        if band is None:
            bands.append([column])
        else:
            band.append(column)
    return [sorted(band, key=lambda c: -c.x) for band in bands]


def vertical_markdown(page: pymupdf.Page) -> str:
    """The Markdown of a vertical page (see the module's docstring)."""
    layout = _layout(page)
    if layout is None:
        return ""
    columns, across, body = layout
    blocks: list[tuple[float, str]] = list(across)
    for band in _bands(columns, body):
        top = min(column.top for column in band)
        bottom = max(column.bottom for column in band)
        paragraph = ""
        previous: _Column | None = None
        for column in band:
            goes_on = (
                previous is not None
                and previous.bottom >= bottom - 1.5 * body
                and column.top <= top + 0.5 * body
            )
            if previous is not None and not goes_on:
                blocks.append((top, paragraph))
                paragraph = ""
            paragraph += column.text
            previous = column
        if paragraph:
            blocks.append((top, paragraph))
    ordered = sorted(enumerate(blocks), key=lambda item: (item[1][0], item[0]))
    return "\n\n".join(text for _, (_, text) in ordered) + "\n"
