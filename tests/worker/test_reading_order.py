"""A page of two columns reads each column whole, also where a short box of one column stands
level with the gap between two paragraphs of the other; a box that spans the columns still
cuts the page across."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from hypothesis import given
from hypothesis import strategies as st
from pymupdf4llm.helpers import utils

from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.reading_order import (
    columns_in_stripe,
    stripes_joined,
)

THEIRS = utils.cluster_columns_in_stripe
"""pymupdf4llm's own (the converter puts ours in its place only while converting)."""
THEIR_STRIPES = utils.cluster_stripes

LEFT_TOP = "Regiments crossed the river at night and dug in along the bluffs above the town."
LEFT_BOTTOM = "The siege lines ran for miles and the gunboats shelled the batteries every day."
RIGHT_TOP = "Supplies came up the river on steamers that had to run past the shore guns first."
RIGHT_BOTTOM = "By midsummer the garrison was eating mule meat and the surrender came in July."


def _read(stripe: list[tuple]) -> list[str]:
    return [box[4] for column in columns_in_stripe(stripe) for box in column]


def test_a_short_box_level_with_a_gap_of_the_other_column_does_not_cut_it() -> None:
    stripe = [
        (42, 56, 285, 300, "left top"),
        (42, 305, 120, 312, "left heading"),  # level with the right column's gap
        (42, 320, 285, 700, "left bottom"),
        (305, 56, 548, 290, "right top"),
        (305, 330, 548, 700, "right bottom"),
    ]
    assert _read(stripe) == [
        "left top",
        "left heading",
        "left bottom",
        "right top",
        "right bottom",
    ]
    theirs = [box[4] for column in THEIRS(stripe) for box in column]
    assert theirs.index("right top") < theirs.index("left heading")  # what was read before


def test_margin_notes_keep_their_place_beside_the_text() -> None:
    stripe = [
        (72, 50, 545, 200, "first paragraph"),
        (550, 100, 590, 110, "first note"),
        (72, 220, 545, 380, "second paragraph"),  # level with the gap between the notes
        (550, 400, 590, 410, "second note"),  # level with the gap between paragraphs
        (72, 420, 545, 600, "third paragraph"),
    ]
    read = _read(stripe)
    assert read == [
        "first paragraph",
        "first note",
        "second paragraph",
        "second note",
        "third paragraph",
    ]
    assert read == [box[4] for column in THEIRS(stripe) for box in column]


def test_a_box_across_the_columns_still_cuts_the_page() -> None:
    stripe = [
        (42, 56, 285, 300, "left top"),
        (305, 56, 548, 300, "right top"),
        (60, 310, 530, 330, "figure caption"),
        (42, 340, 285, 700, "left bottom"),
        (305, 340, 548, 700, "right bottom"),
    ]
    assert _read(stripe) == [
        "left top",
        "right top",
        "figure caption",
        "left bottom",
        "right bottom",
    ]


_coordinate = st.integers(0, 600)


@st.composite
def _boxes(draw: st.DrawFn) -> list[tuple]:
    found = []
    for n in range(draw(st.integers(1, 12))):
        x0, y0 = draw(_coordinate), draw(_coordinate)
        width, height = draw(st.integers(3, 300)), draw(st.integers(3, 120))
        found.append((x0, y0, x0 + width, y0 + height, f"box {n}"))
    return found


def _cut_by_theirs_beside_a_column(stripe: list[tuple]) -> bool:
    """Whether pymupdf4llm's rule takes a box for one that spans the page though boxes stand
    in one column beside it: only then may the two rules read a stripe differently."""
    for box in stripe:
        alone = all(o is box or o[1] >= box[3] or o[3] <= box[1] for o in stripe)
        for side in ([o for o in stripe if o[2] <= box[0]], [o for o in stripe if o[0] >= box[2]]):
            above = [o for o in side if o[3] <= box[1]]
            below = [o for o in side if o[1] >= box[3]]
            column = any(not (a[0] >= b[2] or a[2] <= b[0]) for a in above for b in below)
            if alone and column:
                return True
    return False


@given(_boxes())
def test_every_box_is_read_once_and_otherwise_as_pymupdf4llm_reads_it(stripe: list[tuple]) -> None:
    read = _read(stripe)
    assert sorted(read) == sorted(box[4] for box in stripe)
    if not _cut_by_theirs_beside_a_column(stripe):
        assert read == [box[4] for column in THEIRS(stripe) for box in column]


def test_a_converted_page_of_two_columns_reads_each_column_whole(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 72, 290, 290), (LEFT_TOP + " ") * 6, fontsize=10)
    page.insert_text((50, 310), "Lists", fontsize=12)  # level with the right column's gap
    page.insert_textbox(pymupdf.Rect(50, 322, 290, 560), (LEFT_BOTTOM + " ") * 6, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 72, 550, 280), (RIGHT_TOP + " ") * 6, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 340, 550, 560), (RIGHT_BOTTOM + " ") * 6, fontsize=10)
    _assert_columns_read_whole(doc, tmp_path)


def _assert_columns_read_whole(doc: pymupdf.Document, tmp_path: Path) -> None:
    """The page converted reads its left column, top and bottom, before its right one, and the
    converter puts pymupdf4llm's own functions back after."""
    source = tmp_path / "columns.pdf"
    doc.save(source)
    markdown = convert(source, "pdf", tmp_path / "work", ConverterOptions()).pages[0]
    order = [markdown.index(text) for text in (LEFT_TOP, LEFT_BOTTOM, RIGHT_TOP, RIGHT_BOTTOM)]
    assert order == sorted(order), markdown
    assert utils.cluster_columns_in_stripe is THEIRS
    assert utils.cluster_stripes is THEIR_STRIPES


ASAETR_ABOVE = [
    (72, 184, 141, 194, "Abstract"),
    (72, 201, 315, 244, "abstract"),
    (72, 250, 315, 268, "keywords"),
    (333, 188, 411, 194, "Finer Objectives"),
    (333, 201, 543, 210, "well, that sounds"),
    (339, 223, 576, 244, "item 1"),
    (339, 258, 518, 266, "item 2"),
]
"""The layout model's boxes on asaetr.pdf's first page above a gap both its columns leave at
the same height (268 to 281 points down)."""
ASAETR_BELOW = [
    (72, 292, 169, 302, "Introduction"),
    (72, 309, 315, 401, "introduction"),
    (339, 281, 576, 299, "item 2 ends"),
    (333, 345, 456, 356, "Getting Started"),
]


def test_columns_go_on_across_a_gap_both_leave_at_one_height() -> None:
    title = [(169, 88, 485, 104, "title")]
    stripes = stripes_joined([title, ASAETR_ABOVE, ASAETR_BELOW])
    assert [[box[4] for box in stripe] for stripe in stripes] == [
        ["title"],
        [box[4] for box in ASAETR_ABOVE + ASAETR_BELOW],
    ]
    read = [box[4] for column in columns_in_stripe(stripes[1]) for box in column]
    assert read.index("introduction") < read.index("Finer Objectives")


def test_a_text_beside_its_translation_is_read_row_by_row() -> None:
    """asternote.pdf: English on the left, Japanese on the right, section by section."""
    rows = [
        [(57, 300, 290, 348, "section 1"), (305, 300, 538, 348, "section 1 translated")],
        [(57, 375, 290, 417, "section 2"), (305, 373, 538, 418, "section 2 translated")],
    ]
    assert stripes_joined(rows) == rows


def test_rows_that_stand_in_other_columns_are_read_row_by_row() -> None:
    authors = [(150, 120, 280, 160, "first author"), (330, 120, 460, 160, "second author")]
    body = [(72, 180, 300, 600, "left column"), (320, 180, 548, 600, "right column")]
    three = [(72, 620, 220, 700, "a"), (230, 620, 380, 700, "b"), (390, 620, 548, 700, "c")]
    stripes = [authors, body, three]
    assert stripes_joined(stripes) == stripes


def test_a_converted_page_reads_its_columns_whole_across_a_gap_level_in_both(
    tmp_path: Path,
) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((150, 60), "A Title Across Both Columns", fontsize=18)
    page.insert_textbox(pymupdf.Rect(50, 90, 290, 300), (LEFT_TOP + " ") * 6, fontsize=10)
    page.insert_textbox(pymupdf.Rect(50, 330, 290, 560), (LEFT_BOTTOM + " ") * 6, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 90, 550, 300), (RIGHT_TOP + " ") * 6, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 345, 550, 560), (RIGHT_BOTTOM + " ") * 6, fontsize=10)
    _assert_columns_read_whole(doc, tmp_path)


@given(st.lists(_boxes(), max_size=5))
def test_joining_stripes_keeps_every_box_once_in_its_order(stripes: list[list[tuple]]) -> None:
    joined = stripes_joined(stripes)
    assert [box for stripe in joined for box in stripe] == [b for s in stripes for b in s]
    assert len(joined) <= len(stripes)
