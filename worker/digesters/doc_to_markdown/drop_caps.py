"""Drop caps: a paragraph's large initial letter put back at the front of its first word.

A paper or a book may open a paragraph with an initial two or three lines tall ("lettrine").
MuPDF reads it as a line of its own, often inside the block before, so the converter writes
``ver the past three decades ...`` with the ``O`` somewhere else, or as a heading. In the text
the converter reads (``extractDICT``'s blocks), such a letter is taken out of its line and set
before the first line that starts just right of it and level with its top. The line then
starts where the letter did; its first word keeps its own box, which a region the layout
model draws round the letter (a "header" on asaetr.pdf's first page) does not take in.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

TALLER = 2.0
"""An initial is at least this many times the size of the page's text (by characters)."""
MIN_CHARACTERS = 40
SMALLEST = 14.0
"""No drop cap is smaller than this (points): twice a 7-point text."""


def _size(span: dict[str, Any]) -> float:
    return float(span["size"])


def _initials(blocks: list[dict[str, Any]], body: float) -> list[tuple[int, int]]:
    """(block, line) of each line that is one large letter."""
    found = []
    for b, block in enumerate(blocks):
        for n, line in enumerate(block.get("lines", ())):
            spans = [span for span in line["spans"] if span["text"].strip()]
            if (
                len(spans) == 1
                and len(spans[0]["text"].strip()) == 1
                and spans[0]["text"].strip().isalpha()
                and _size(spans[0]) >= TALLER * body
                and abs(line["dir"][1]) < 1e-3
            ):
                found.append((b, n))
    return found


def _first_line_beside(
    blocks: list[dict[str, Any]], initial: dict[str, Any], body: float
) -> dict[str, Any] | None:
    """The line that starts just right of ``initial`` and level with its top."""
    _, top, right, _ = initial["bbox"]
    best = None
    for block in blocks:
        for line in block.get("lines", ()):
            if line is initial or not line["spans"]:
                continue
            x0, y0, _, y1 = line["bbox"]
            beside = right - 2 <= x0 <= right + 3 * body
            level = abs(y0 - top) <= 0.5 * max(y1 - y0, body)
            if beside and level and (best is None or x0 < best["bbox"][0]):
                best = line
    return best


def joined_drop_caps(page: dict[str, Any]) -> dict[str, Any]:
    """``page`` (``extractDICT``'s result, changed in place) with each drop cap at the front
    of its paragraph's first line."""
    blocks = page.get("blocks") or []
    spans = [span for block in blocks for line in block.get("lines", ()) for span in line["spans"]]
    letters = [
        span
        for span in spans
        if span["size"] >= SMALLEST and len(text := span["text"].strip()) == 1 and text.isalpha()
    ]
    if not letters:
        return page
    sizes: Counter[float] = Counter()
    for span in spans:
        sizes[round(_size(span), 1)] += len(span["text"].strip())
    if sum(sizes.values()) < MIN_CHARACTERS:
        return page
    body = _weighted_median(sizes)
    if max(_size(span) for span in letters) < TALLER * body:
        return page
    emptied = []
    for b, n in reversed(_initials(blocks, body)):
        initial = blocks[b]["lines"][n]
        beside = _first_line_beside(blocks, initial, body)
        if beside is None:
            continue
        letter = next(span for span in initial["spans"] if span["text"].strip())
        first = beside["spans"][0]
        first["text"] = letter["text"].strip() + first["text"].lstrip()
        beside["bbox"] = (initial["bbox"][0], *beside["bbox"][1:])
        del blocks[b]["lines"][n]
        if not blocks[b]["lines"]:
            emptied.append(b)
    for b in sorted(set(emptied), reverse=True):
        del blocks[b]
    return page


def _weighted_median(counts: Counter[float]) -> float:
    half = sum(counts.values()) / 2
    seen = 0
    for size in sorted(counts):
        seen += counts[size]
        if seen >= half:
            return size
    return 0.0
