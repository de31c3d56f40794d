"""Code blocks with the spaces their lines print.

pymupdf4llm's layout mode writes a code block's line as its spans' texts run together, and its
line reader has dropped the spans that are only a space. A typewriter face without a space
glyph (TeX's) sets each word as a span of its own with such a space between, so
``% needed even though this class will`` came out ``%neededeventhoughthisclasswill`` and a
comment set beside its command ran into it. Here a line's spans are joined by as many spaces
as the face's character width fits in the gap between them (a gap under half a character is
none), and a line indented further than the block's leftmost keeps its indent the same way:
the block reads as the page prints it, columns and nesting included.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def _character_width(lines: Sequence[dict[str, Any]]) -> float | None:
    """The typewriter face's character width: the median of the spans' widths per character
    (None without a span to measure)."""
    widths = [
        (span["bbox"][2] - span["bbox"][0]) / len(span["text"])
        for line in lines
        for span in line["spans"]
        if span["text"] and span["bbox"][2] > span["bbox"][0]
    ]
    return statistics.median(widths) if widths else None


def _spaces(gap: float, width: float) -> str:
    return " " * max(round(gap / width), 0)


def _printed_lines(lines: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The spans of ``lines`` by the printed line they stand on (MuPDF may make two lines of
    one: a command and the comment set beside it), top to bottom, each left to right."""
    rows: list[tuple[float, float, list[dict[str, Any]]]] = []  # (middle, height, spans)
    for line in sorted(lines, key=lambda line: (line["bbox"][1] + line["bbox"][3]) / 2):
        middle = (line["bbox"][1] + line["bbox"][3]) / 2
        height = line["bbox"][3] - line["bbox"][1]
        if rows and abs(middle - rows[-1][0]) < 0.5 * min(height, rows[-1][1]):
            rows[-1][2].extend(line["spans"])
        else:
            rows.append((middle, height, list(line["spans"])))
    return [sorted(spans, key=lambda span: span["bbox"][0]) for _, _, spans in rows]


def code_lines(lines: Sequence[dict[str, Any]]) -> list[str]:
    """A code block's lines as the page prints them, from its text lines (MuPDF's, or
    pymupdf4llm's: a ``bbox`` and ``spans``, each span with its ``bbox`` and ``text``)."""
    width = _character_width(lines)
    left = min((line["bbox"][0] for line in lines), default=0.0)
    texts = []
    for spans in _printed_lines(lines):
        if width is None or not spans:
            texts.append("".join(span["text"] for span in spans).rstrip())
            continue
        text = _spaces(spans[0]["bbox"][0] - left, width) + spans[0]["text"]
        for before, span in itertools.pairwise(spans):
            text += _spaces(span["bbox"][0] - before["bbox"][2], width) + span["text"]
        texts.append(text.rstrip())
    return texts


def code_block_markdown(lines: Sequence[dict[str, Any]]) -> str:
    """A code block as pymupdf4llm writes it, its lines as :func:`code_lines` reads them."""
    return "```\n" + "".join(text + "\n" for text in code_lines(lines)) + "```\n\n"


@contextmanager
def code_with_its_spaces() -> Iterator[None]:
    """While converting, layout mode writes code blocks by :func:`code_block_markdown`."""
    from pymupdf4llm.helpers import document_layout

    written = document_layout.code_block_to_md
    document_layout.code_block_to_md = code_block_markdown
    try:
        yield
    finally:
        document_layout.code_block_to_md = written
