"""Code blocks read as the page prints them: the words of a typewriter face that sets each
word apart keep their spaces, a comment set beside its command stays on its line, an indent
stays."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pymupdf
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.worker.digesters.doc_to_markdown.code_blocks import code_lines
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

WIDTH = 5.4
"""A 9-point typewriter face's character width."""
LISTING = [
    "\\pagenumbering{arabic}       % needed even though this class will",
    "                             % not show page numbers",
    "latexmk -pdf my-paper.tex",
    "    \\setlength{\\paperwidth}{210mm}%",
]


def _line(text: str, top: float) -> dict[str, Any]:
    """A line as MuPDF reads a face without a space glyph: a span per word at its column."""
    spans = [
        {"text": word, "bbox": (start * WIDTH, top, (start + len(word)) * WIDTH, top + 9)}
        for word, start in ((m[0], m.start()) for m in re.finditer(r"\S+", text))
    ]
    left = spans[0]["bbox"][0] if spans else 0.0
    right = spans[-1]["bbox"][2] if spans else 0.0
    return {"bbox": (left, top, right, top + 9), "spans": spans}


printed = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1)
code_line = st.lists(st.tuples(st.integers(0, 6), printed), min_size=1, max_size=8).map(
    lambda words: "".join(" " * gap + word for gap, word in words)
)


@given(st.lists(code_line, min_size=1, max_size=6))
def test_any_listing_reads_as_printed_columns_and_indents_included(listing: list[str]) -> None:
    flush = ["x", *listing]  # a line at the block's left edge
    lines = [_line(text, 12.0 * number) for number, text in enumerate(flush)]
    assert code_lines(lines) == [text.rstrip() for text in flush]


def test_a_comment_mupdf_reads_as_a_line_of_its_own_stays_beside_its_command() -> None:
    command, comment = _line(LISTING[0], 0.0), _line(LISTING[0], 0.4)
    command["spans"], comment["spans"] = command["spans"][:1], comment["spans"][1:]
    comment["bbox"] = (comment["spans"][0]["bbox"][0], 0.4, comment["bbox"][2], 9.4)
    command["bbox"] = command["spans"][0]["bbox"]
    assert code_lines([comment, command]) == [LISTING[0]]


def test_a_space_mupdf_gives_as_a_span_is_not_doubled() -> None:
    spans = [
        {"text": "latexmk", "bbox": (0.0, 0.0, 7 * WIDTH, 9.0)},
        {"text": " ", "bbox": (7 * WIDTH, 0.0, 8 * WIDTH, 9.0)},
        {"text": "-pdf", "bbox": (8 * WIDTH, 0.0, 12 * WIDTH, 9.0)},
    ]
    assert code_lines([{"bbox": (0.0, 0.0, 12 * WIDTH, 9.0), "spans": spans}]) == ["latexmk -pdf"]


def _listing_pdf(path: Path) -> Path:
    """A manual's page: prose, then a listing set word by word in a typewriter face, as TeX
    sets one without a space glyph."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "The class file is read as follows, by every run.", fontsize=11)
    width = pymupdf.get_text_length("x", fontname="cour", fontsize=9)
    for number, text in enumerate(LISTING):
        for match in re.finditer(r"\S+", text):
            where = (72 + match.start() * width, 100 + 12 * number)
            page.insert_text(where, match[0], fontsize=9, fontname="cour")
    page.insert_text((72, 180), "And prose below it, as a manual goes on.", fontsize=11)
    doc.save(path)
    return path


def test_a_listing_set_word_by_word_reads_as_printed_by_either_engine(tmp_path: Path) -> None:
    source = _listing_pdf(tmp_path / "listing.pdf")
    plain = convert(source, "pdf", tmp_path / "plain", ConverterOptions())
    assert plain.engines == ("text",)
    assert "```\n" + "\n".join(LISTING[:3]) + "\n```" in plain.pages[0]
    assert f"```\n{LISTING[3].strip()}\n```" in plain.pages[0], "MuPDF's block of its own"
    layout = convert(source, "pdf", tmp_path / "layout", ConverterOptions(plain_pages=False))
    assert layout.engines == ("layout",)
    assert "```\n" + "\n".join(LISTING) + "\n```" in layout.pages[0]
