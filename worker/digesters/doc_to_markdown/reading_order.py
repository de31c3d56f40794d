"""The order a page's columns are read in: a box cuts the page across only when no column runs
beside it.

pymupdf4llm puts the layout model's boxes in reading order itself: it cuts the page into
horizontal stripes, and inside a stripe a box that no other box stands level with is taken
for one that spans the page (a title, a wide figure): what is above it is read before it,
column by column, and what is below it after. On a page of two columns a short box of one
column (a heading, a one-line paragraph) often stands level with the gap between two
paragraphs of the other column; it then cut both columns, and the page read the tops of both
columns, the box, then the bottoms of both (mnras_guide p.3: "For a numbered list" after the
next section's heading in the other column; sample-sigconf p.1: the left column's CCS
CONCEPTS between the right column's keywords and its introduction). Here such a box cuts the
stripe only when no column runs beside it: no boxes to one side of it, one above and one below
it, that stand in one column, both columns wide. And a gap across the whole page that both
columns leave at one height no longer ends a stripe where the columns run on below it
(:func:`stripes_joined`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

Box = Sequence[Any]
"""A layout box as pymupdf4llm orders them: x0, y0, x1, y1, class."""
_COLUMN_GAP = 1.0
"""A box further right than this of every box of a column starts the next column (as
pymupdf4llm's ``cluster_columns_in_stripe`` has it)."""
_COLUMN_START = 4.0
"""How far apart (points) the left edges of one column in two stripes may be for the column to
go on from one into the other."""
_ROW_START = 4.0
"""Columns whose text starts again at one height (within this many points) below a gap across
the page stand in rows, as a text and its translation side by side do (asternote.pdf), and
are read row by row; where columns run on, a gap level in both is a coincidence of two
paragraph breaks, and what follows it seldom starts level in both."""
MIN_COLUMN_SHARE = 0.2
"""A column is at least this share of the stripe's width (a page of two columns: over 0.4
each). Narrower boxes beside the text (margin notes, line numbers, a slide's navigation) are
no column: a margin note keeps its place level with what it annotates, and a paragraph level
with a gap between margin notes still cuts across."""


def _side_by_side(a: Box, b: Box) -> bool:
    return a[0] >= b[2] or a[2] <= b[0]


def _level(a: Box, b: Box) -> bool:
    return a[1] < b[3] and b[1] < a[3]


def _column_beside(box: Box, stripe: Sequence[Box]) -> bool:
    """Whether a column runs beside ``box``, which stands in one itself: to its left or right,
    a box above it and a box below it that stand in one column. Columns are wide
    (:data:`MIN_COLUMN_SHARE`)."""
    narrowest = MIN_COLUMN_SHARE * (max(b[2] for b in stripe) - min(b[0] for b in stripe))

    def wide(other: Box) -> bool:
        return other[2] - other[0] >= narrowest

    if not any(wide(other) for other in stripe if not _side_by_side(other, box)):
        return False
    for beside in (
        [r for r in stripe if r[2] <= box[0] and wide(r)],
        [r for r in stripe if r[0] >= box[2] and wide(r)],
    ):
        above = [r for r in beside if r[3] <= box[1]]
        below = [r for r in beside if r[1] >= box[3]]
        if any(not _side_by_side(a, b) for a in above for b in below):
            return True
    return False


def _cuts_across(box: Box, stripe: Sequence[Box]) -> bool:
    """Whether ``box`` stands level with no other box of ``stripe`` and no column runs
    beside it."""
    alone = all(other is box or not _level(other, box) for other in stripe)
    return alone and not _column_beside(box, stripe)


def _columns(boxes: Sequence[Box]) -> list[list[Box]]:
    """``boxes`` in columns, left to right, each top to bottom."""
    columns: list[list[Box]] = []
    for box in sorted(boxes, key=lambda b: b[0]):
        if columns and box[0] - max(b[2] for b in columns[-1]) <= _COLUMN_GAP:
            columns[-1].append(box)
        else:
            columns.append([box])
    return [sorted(column, key=lambda b: b[1]) for column in columns]


def _same_columns(upper: Sequence[Box], lower: Sequence[Box]) -> bool:
    """Whether the columns of ``upper`` go on in ``lower``: both stand in the same two or more
    wide columns, each starting where it did, and together they still do; and the columns'
    text does not start again level below the gap (:data:`_ROW_START`)."""
    above, below, both = _columns(upper), _columns(lower), _columns([*upper, *lower])
    if not len(above) == len(below) == len(both) > 1:
        return False
    tops = [min(b[1] for b in column) for column in below]
    if max(tops) - min(tops) <= _ROW_START:
        return False
    narrowest = MIN_COLUMN_SHARE * (max(b[2] for b in both[-1]) - min(b[0] for b in both[0]))
    return all(
        max(b[2] for b in column) - min(b[0] for b in column) >= narrowest
        and abs(min(b[0] for b in top) - min(b[0] for b in bottom)) <= _COLUMN_START
        for top, bottom, column in zip(above, below, both, strict=True)
    )


def stripes_joined(stripes: Sequence[Sequence[Box]]) -> list[list[Box]]:
    """``stripes`` with each one whose columns go on from the stripe above joined to it.

    pymupdf4llm cuts a page into stripes at every gap of 12 points across its whole width,
    and reads a stripe's columns before the next stripe's. Two columns of running text that
    break their paragraphs level with each other were read as two halves: the tops of both
    columns, then the bottoms (asaetr.pdf p.1: the right column's first paragraphs before the
    left column's introduction; issue-604.pdf p.79: a paragraph of the right column between
    two of the left)."""
    joined: list[list[Box]] = []
    for stripe in stripes:
        if joined and _same_columns(joined[-1], stripe):
            joined[-1] = [*joined[-1], *stripe]
        else:
            joined.append(list(stripe))
    return joined


def columns_in_stripe(stripe: Sequence[Box]) -> list[list[Box]]:
    """A stripe's boxes in reading order, as lists read one after the other: the columns
    between the boxes that cut across, and those boxes."""
    cuts = sorted((box for box in stripe if _cuts_across(box, stripe)), key=lambda b: b[1])
    rest = [box for box in stripe if all(box is not cut for cut in cuts)]
    ordered: list[list[Box]] = []
    top = min(box[1] for box in stripe)
    for cut in cuts:
        ordered += _columns([b for b in rest if b[1] >= top and b[3] <= cut[1]])
        ordered.append([cut])
        top = cut[3]
    ordered += _columns([b for b in rest if b[1] >= top])
    return [column for column in ordered if column]


@contextmanager
def columns_read_whole() -> Iterator[None]:
    """While converting in layout mode, pymupdf4llm reads a stripe's columns with
    :func:`columns_in_stripe` (a release without that step keeps its own order)."""
    from pymupdf4llm.helpers import utils

    theirs = getattr(utils, "cluster_columns_in_stripe", None)
    if theirs is None:
        yield
        return
    their_stripes = utils.cluster_stripes

    def cluster_stripes(*args: Any, **kwargs: Any) -> list[list[Box]]:
        return stripes_joined(their_stripes(*args, **kwargs))

    utils.cluster_columns_in_stripe = columns_in_stripe
    utils.cluster_stripes = cluster_stripes
    try:
        yield
    finally:
        utils.cluster_columns_in_stripe = theirs
        utils.cluster_stripes = their_stripes
