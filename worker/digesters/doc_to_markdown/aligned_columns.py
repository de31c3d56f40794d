"""Text set in aligned columns without rules, written as a table (or, numbered lines of code,
as a listing) instead of one run-on paragraph.

The layout model labels a block text when nothing is drawn round it, and pymupdf4llm writes a
text block's lines one after another as a paragraph. A list of codes and their names, a
table of values without lines, the fields of a form set as "Name:" and its value then read
"cmr Computer Modern Roman cmss Computer Modern Sans ..." (fntguide p.5), "LaTeX name: OT2
Public name: UW cyrillic encoding Author: ..." (encguide p.5). Here a text block whose lines
are cut by gaps wider than the text's size (:data:`GAP`), their pieces standing in columns
that no piece crosses, becomes a Markdown table: a row per line, and a line holding only a
later column's piece continues the row above (a cell that wraps). A block
whose first column is as wide as prose (:data:`MAX_FIRST_COLUMN`: a paragraph with a note in
the margin, two columns of text the model took for one block) is left as it was; so is a
block of fewer than :data:`MIN_ROWS` such lines. Lines that start with their numbers, one
more each line, are a listing and come out as one (a fenced block, a line each); numbered
lines of a justified paragraph (a manuscript's line numbers) are that paragraph, without them.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

GAP = 1.0
"""Pieces of a line further apart than this many times the text's size stand in two columns
(word spaces are about a third of it; fntguide's codes stand 1.2 from their names)."""
MIN_ROWS = 3
"""Lines cut in columns a block needs, and they must be most of its lines (:data:`MIN_SHARE`)."""
MIN_SHARE = 0.6
MAX_FIRST_COLUMN = 0.45
"""The widest a first column may be against the block: keys, codes, names and numbers are
narrow; a line of prose fills the block."""
PROSE_LETTERS = 0.8
"""Numbered lines are a paragraph's when they are justified, this share of their marks are
letters (AAS's numbered manuscript: 0.92 and more; cmfonts' listing of font shapes: 0.40) and
they hold :data:`PROSE_WORDS` words or more (median): a line of TeX is mostly letters too."""
PROSE_WORDS = 6
_NUMBER = re.compile(r"\d+")

Line = dict[str, Any]
"""A line as pymupdf4llm hands a block's lines over: ``bbox`` and its ``spans``."""
Cell = list[dict[str, Any]]
Styled = Callable[[Cell], tuple[str, str]]
"""pymupdf4llm's ``get_styled_text``: spans as Markdown (bold, italics, code marks)."""


def _cells(line: Line) -> list[Cell]:
    """A line's spans, cut where a gap is wider than :data:`GAP` times their size."""
    spans = sorted((s for s in line["spans"] if s["text"].strip()), key=lambda s: s["bbox"][0])
    cells: list[Cell] = []
    for span in spans:
        if cells and span["bbox"][0] - cells[-1][-1]["bbox"][2] <= GAP * max(span["size"], 1):
            cells[-1].append(span)
        else:
            cells.append([span])
    return cells


def _columns(rows: list[list[Cell]]) -> list[tuple[float, float]]:
    """Where the columns stand, left to right: the spans across the page that the lines'
    pieces cover, pieces that overlap one another across lines taken as one column (so a
    column of numbers set flush right is one, as is a centred one)."""
    columns: list[tuple[float, float]] = []
    for x0, x1 in sorted((cell[0]["bbox"][0], cell[-1]["bbox"][2]) for row in rows for cell in row):
        if columns and x0 <= columns[-1][1]:
            columns[-1] = (columns[-1][0], max(columns[-1][1], x1))
        else:
            columns.append((x0, x1))
    return columns


def aligned_rows(lines: Sequence[Line]) -> list[list[Cell]] | None:
    """The block's lines as rows of cells, one per column (empty where a line has nothing),
    or None when the block is not set in aligned columns."""
    rows = [cells for cells in map(_cells, lines) if cells]
    cut = [row for row in rows if len(row) > 1]
    if len(cut) < MIN_ROWS or len(cut) < MIN_SHARE * len(rows):
        return None
    columns = _columns(rows)
    width = columns[-1][1] - columns[0][0]
    if len(columns) < 2 or columns[0][1] - columns[0][0] > MAX_FIRST_COLUMN * width:
        return None
    table: list[list[Cell]] = []
    for row in rows:
        places = [
            next(n for n, (x0, x1) in enumerate(columns) if x0 <= cell[0]["bbox"][0] <= x1)
            for cell in row
        ]
        if len(set(places)) < len(places):  # two pieces of a line in one column
            return None
        if len(row) == 1 and places[0] > 0 and table and table[-1][places[0]]:
            table[-1][places[0]] = [*table[-1][places[0]], *row[0]]  # a cell that wraps
            continue
        cells: list[Cell] = [[] for _ in columns]
        for place, cell in zip(places, row, strict=True):
            cells[place] = cell
        table.append(cells)
    return table


def _text(cell: Cell, styled: Styled) -> str:
    """A cell as a Markdown table holds it: on one line, its ``|`` escaped."""
    return styled(cell)[0].strip().replace("|", "\\|") if cell else ""


def _is_listing(table: list[list[Cell]]) -> bool:
    """Whether each row starts with its number, one more than the row before's."""
    numbers = [" ".join(s["text"] for s in row[0]).split(" ")[0] for row in table if row[0]]
    if len(numbers) < len(table) or not all(_NUMBER.fullmatch(n) for n in numbers):
        return False
    return all(int(b) == int(a) + 1 for a, b in itertools.pairwise(numbers))


def _justified(table: list[list[Cell]]) -> bool:
    """Whether most rows but the last end where the longest ends: lines of a justified
    paragraph (a listing's lines end where their code does)."""
    ends = [max(cell[-1]["bbox"][2] for cell in row if cell) for row in table[:-1]]
    size = statistics.median(s["size"] for row in table for cell in row for s in cell)
    return sum(end >= max(ends) - size for end in ends) >= MIN_SHARE * len(ends)


def _worded(table: list[list[Cell]]) -> bool:
    """Whether the rows but their numbers read as prose: words to a line
    (:data:`PROSE_WORDS`), mostly letters (:data:`PROSE_LETTERS`). Code has few of either."""
    texts = [" ".join(s["text"] for cell in row[1:] for s in cell) for row in table]
    marks = [ch for text in texts for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in marks) >= PROSE_LETTERS * len(marks)
    return (
        bool(marks) and letters and statistics.median(len(t.split()) for t in texts) >= PROSE_WORDS
    )


def _without_numbers(lines: Sequence[Line]) -> list[Line]:
    """``lines`` without the number each starts with."""
    out = []
    for line in lines:
        spans = sorted(line["spans"], key=lambda s: s["bbox"][0])
        first = next((n for n, s in enumerate(spans) if s["text"].strip()), None)
        if first is not None and _NUMBER.fullmatch(spans[first]["text"].strip()):
            spans = spans[first + 1 :]
        out.append({**line, "spans": spans})
    return out


def aligned_markdown(
    lines: Sequence[Line], styled: Styled, prose: Callable[[list[Line]], str]
) -> str | None:
    """A block's Markdown when it is set in aligned columns (:func:`aligned_rows`), else
    None: a Markdown table, the first row its header (as pymupdf4llm writes its tables);
    numbered lines of code a fenced block, a line a row; numbered lines of a paragraph (a
    manuscript's line numbers: justified, mostly letters) the paragraph, as ``prose`` writes
    it, without the numbers."""
    table = aligned_rows(lines)
    if table is None:
        return None
    if _is_listing(table):
        if len(table) > 1 and _justified(table) and _worded(table):
            return prose(_without_numbers(lines))
        rows = [" ".join(s["text"].strip() for cell in row for s in cell) for row in table]
        return "```\n" + "\n".join(rows) + "\n```\n\n"
    rows = ["|" + "|".join(_text(cell, styled) for cell in row) + "|" for row in table]
    rows.insert(1, "|" + "|".join("---" for _ in table[0]) + "|")
    return "\n".join(rows) + "\n\n"


@contextmanager
def aligned_columns_as_tables() -> Iterator[None]:
    """While converting in layout mode, text blocks set in aligned columns come out as
    tables (:func:`aligned_rows`); a block all in a monospaced font stays the code block
    pymupdf4llm makes of it."""
    from pymupdf4llm.helpers import document_layout

    theirs = getattr(document_layout, "text_to_md", None)
    if theirs is None:  # a release that writes text blocks otherwise: as it does
        yield
        return

    def text_to_md(textlines: list[Line], ignore_code: bool = False) -> str:
        if not textlines or (not ignore_code and document_layout.is_monospaced(textlines)):
            return theirs(textlines, ignore_code)
        made = aligned_markdown(
            textlines, document_layout.get_styled_text, lambda lines: theirs(lines, ignore_code)
        )
        return theirs(textlines, ignore_code) if made is None else made

    document_layout.text_to_md = text_to_md
    try:
        yield
    finally:
        document_layout.text_to_md = theirs
