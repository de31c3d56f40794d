"""Text set in aligned columns without rules becomes a table (numbered lines of code, a
listing) instead of one run-on paragraph; prose, with or without a note in its margin, stays
prose; no word is lost or doubled."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from hypothesis import given
from hypothesis import strategies as st
from pymupdf4llm.helpers import document_layout

from bucketdigest.worker.digesters.doc_to_markdown.aligned_columns import (
    aligned_markdown,
    aligned_rows,
)
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

FAMILIES = [
    ("cmr", "Computer Modern Roman"),
    ("cmss", "Computer Modern Sans"),
    ("cmtt", "Computer Modern Typewriter"),
    ("ptm", "Adobe Times"),
    ("phv", "Adobe Helvetica"),
]
PROSE = (
    "The font series is denoting a combination of the weight and the width of the letters, "
    "and the shape their slant; these are concatenated to a single series value. "
)


def _span(text: str, x: float, y: float, size: float = 10.0) -> dict:
    width = 0.5 * size * len(text)
    return {
        "text": text,
        "bbox": (x, y, x + width, y + size),
        "size": size,
        "flags": 0,
        "char_flags": 0,
        "line": int(y),
        "block": 0,
    }


def _line(*pieces: tuple[str, float], y: float) -> dict:
    """A line of spans, one a word, the words of a piece 3 points apart."""
    spans = []
    for text, x in pieces:
        for word in text.split():
            spans.append(_span(word, x, y))
            x = spans[-1]["bbox"][2] + 3
    return {"bbox": (spans[0]["bbox"][0], y, spans[-1]["bbox"][2], y + 10), "spans": spans}


def _as_pymupdf4llm(lines: list[dict]) -> str:
    return document_layout.get_styled_text([s for line in lines for s in line["spans"]])[0]


def _markdown(lines: list[dict]) -> str | None:
    return aligned_markdown(lines, document_layout.get_styled_text, _as_pymupdf4llm)


def test_codes_and_their_names_become_a_table() -> None:
    lines = [
        _line((code, 182), (name, 215), y=100 + 12 * n) for n, (code, name) in enumerate(FAMILIES)
    ]
    table = aligned_rows(lines)
    assert table is not None
    markdown = _markdown(lines)
    assert markdown.splitlines()[:2] == ["|cmr|Computer Modern Roman|", "|---|---|"]
    assert "|phv|Adobe Helvetica|" in markdown.splitlines()


def test_a_value_that_wraps_continues_its_row() -> None:
    lines = [
        _line(("Author:", 100), ("University of Washington", 200), y=100),
        _line(("Glyph slots used:", 100), ("0x00-0x7F, 0x81, 0x82,", 200), y=112),
        _line(("0x86, 0x8A", 200), y=124),
        _line(("Font example:", 100), ("wnr10", 200), y=136),
    ]
    table = aligned_rows(lines)
    assert table is not None
    rows = _markdown(lines).splitlines()
    assert rows[2] == "|Glyph slots used:|0x00-0x7F, 0x81, 0x82, 0x86, 0x8A|"
    assert len(rows) == 5


def test_numbered_lines_of_code_become_a_listing() -> None:
    code = [r"\newif\ifascmac@ptex", r"\ifx\kanjiskip\@undefined", r"\PackageInfo{tascmac}{%"]
    lines = [
        _line((str(11 + n), 80), (text, 110 + 10 * n), y=100 + 12 * n)
        for n, text in enumerate(code)
    ]
    table = aligned_rows(lines)
    assert table is not None
    assert _markdown(lines) == (
        "```\n11 \\newif\\ifascmac@ptex\n12 \\ifx\\kanjiskip\\@undefined\n"
        "13 \\PackageInfo{tascmac}{%\n```\n\n"
    )
    for line in lines:  # lines of code that happen to end level are still code
        line["spans"][-1]["bbox"] = (
            *line["spans"][-1]["bbox"][:2],
            300,
            line["spans"][-1]["bbox"][3],
        )
    assert _markdown(lines).startswith("```\n11 ")


def test_numbered_lines_of_a_paragraph_are_the_paragraph_without_the_numbers() -> None:
    words = (PROSE * 3).split()
    text = [" ".join(words[12 * n : 12 * n + 12]) for n in range(4)]
    lines = [_line((str(224 + n), 60), (line, 100), y=100 + 12 * n) for n, line in enumerate(text)]
    for line in lines[:-1]:  # justified: every line but the last ends at the margin
        line["spans"][-1]["bbox"] = (
            *line["spans"][-1]["bbox"][:2],
            460,
            line["spans"][-1]["bbox"][3],
        )
    assert _markdown(lines) == _as_pymupdf4llm([{"spans": line["spans"][1:]} for line in lines])
    assert "225" not in _markdown(lines)


def test_prose_with_a_note_in_its_margin_stays_prose() -> None:
    words = (PROSE * 3).split()
    lines = []
    for n in range(5):
        text = " ".join(words[12 * n : 12 * n + 12])  # a line of prose, up to the margin
        note = [("New", 480)], [("description", 480)], [("1995/12/01", 480)], [], []
        lines.append(_line((text, 100), *note[n], y=100 + 12 * n))
    assert aligned_rows(lines) is None


words = st.sampled_from(
    ["cmr", "Computer", "Modern", "0x7F,", "—", "=", "15.0pt", "Name:", "7", "8"]
)


@given(
    st.lists(
        st.lists(
            st.tuples(st.lists(words, min_size=1, max_size=3), st.integers(0, 400)),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_every_word_of_a_block_is_in_its_table_once(blocks: list) -> None:
    lines = []
    for n, pieces in enumerate(blocks):
        placed = sorted(((" ".join(w), x) for w, x in pieces), key=lambda p: p[1])
        kept: list[tuple[str, float]] = []
        for text, x in placed:  # pieces of a line do not overlap
            if not kept or x > kept[-1][1] + 5 * len(kept[-1][0]) + 3 * len(kept[-1][0].split()):
                kept.append((text, x))
        lines.append(_line(*kept, y=100 + 12 * n))
    table = aligned_rows(lines)
    markdown = _markdown(lines)  # whatever the block, it is written (or left to pymupdf4llm)
    assert (markdown is None) == (table is None)
    if table is None:
        return
    held = sorted(s["text"] for row in table for cell in row for s in cell)
    assert held == sorted(s["text"] for line in lines for s in line["spans"])


def test_a_converted_list_of_codes_reads_as_a_table(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 160), PROSE * 2, fontsize=10)
    for n, (code, name) in enumerate(FAMILIES):
        page.insert_text((110, 190 + 12 * n), code, fontsize=10)
        page.insert_text((150, 190 + 12 * n), name, fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 270, 520, 400), PROSE * 2, fontsize=10)
    source = tmp_path / "families.pdf"
    doc.save(source)
    markdown = convert(source, "pdf", tmp_path / "work", ConverterOptions()).pages[0]
    assert "|phv|Adobe Helvetica|" in markdown.splitlines(), markdown
    assert PROSE.split(";")[0] in markdown
