"""pymupdf's table finder with its per-character and per-cell steps done in bulk or once,
giving the same results.

The HTML table engine (:mod:`.tables`) runs pymupdf's ``find_tables`` on every page whose
layout holds a table: a fifth of doc-to-markdown's time on the real-world corpus, and more
on documents made of tables. Two of its steps spend most of their time making a Python
object per character or per word rather than finding anything:

- ``make_chars`` lists the page's characters for the finder, each transformed to PDF
  coordinates by a ``Rect`` and a ``Point`` times the page's matrix (30 ms a page on the
  corpus's table pages);
- the grid refinement's page words leave out each word whose centre lies in a span of
  rotated text, testing every word against every such span one ``Rect.contains`` at a time
  (seconds on a page with a rotated table).

Here both are computed over arrays, in MuPDF's own single-precision arithmetic, so every
character and word comes out as pymupdf makes it (checked against pymupdf's functions in
tests/worker/test_table_finder.py). A page whose matrix rotates or skews keeps pymupdf's own
``make_chars``. The functions replace pymupdf's only for the pymupdf release they were
checked on (:data:`CHECKED_RELEASE`); another release keeps its own.

The header finder then asks what kind of text each cell holds (a number, money, a date, a
label...) for every row it weighs, several times over: those answers depend on the text alone
and are kept while converting (:data:`CELL_KINDS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np
import pymupdf

CHECKED_RELEASE = "2.0"
"""The pymupdf release whose ``make_chars`` and ``_refine_page_words`` these reproduce."""
CELL_KINDS = ("cell_type", "numeric_like", "date_or_period_like", "count_alpha", "count_digit")
"""pymupdf's header finder's functions of a cell's text alone (``pymupdf._table_headers``),
whose answers are kept while converting."""
KEPT_CELL_TEXTS = 4096
"""Cell texts whose kinds are kept at once, per function."""


def _chars(page: pymupdf.Page, clip: Any = None, *, original: Any) -> pymupdf.TextPage:
    """pymupdf.table.make_chars: the page's characters into the finder's ``CHARS`` list;
    returns the text page it read them from."""
    from pymupdf import table

    ctm = page.transformation_matrix
    if ctm.b != 0 or ctm.c != 0:  # a turned page: its corners need MuPDF's general case
        return original(page, clip=clip)
    textpage = page.get_textpage(clip=clip, flags=table.FLAGS)
    blocks = page.get_text("rawdict", textpage=textpage)["blocks"]
    found = []  # (bbox, origin, the span's facts, character)
    for block in blocks:
        for line in block["lines"]:
            cosine, sine = (round(line["dir"][0], 4), round(line["dir"][1], 4))
            turn = (float(cosine), float(-sine), float(sine), float(cosine))
            for span in sorted(line["spans"], key=lambda s: s["bbox"][0]):
                bold = bool(span["flags"] & pymupdf.TEXT_FONT_BOLD or span["char_flags"] & 8)
                color = pymupdf.sRGB_to_pdf(span["color"])
                facts = (span["font"], span["size"], bold, color, sine == 0, turn)
                for char in sorted(span["chars"], key=lambda c: c["bbox"][0]):
                    found.append((char["bbox"], char["origin"], facts, char["c"]))
    if not found:
        return textpage
    # fz_transform_rect and fz_transform_point on an unturned matrix, in single precision
    f32 = np.float32
    a, d, e, f = f32(ctm.a), f32(ctm.d), f32(ctm.e), f32(ctm.f)
    boxes = np.array([row[0] for row in found], dtype=np.float64).astype(f32)
    origins = np.array([row[1] for row in found], dtype=np.float64).astype(f32)
    low, high = (boxes[:, 3], boxes[:, 1]) if d < 0 else (boxes[:, 1], boxes[:, 3])
    zero = f32(0)
    tops = ((boxes[:, 0] * zero + low * d) + f).tolist()
    bottoms = ((boxes[:, 2] * zero + high * d) + f).tolist()
    xs = ((origins[:, 0] * a + origins[:, 1] * zero) + e).tolist()
    ys = ((origins[:, 0] * zero + origins[:, 1] * d) + f).tolist()
    chars = table.CHARS._list()
    page_number = page.number + 1
    doctop = page.rect.height * page.number
    for (bbox, _, facts, text), y0, y1, x, y in zip(found, tops, bottoms, xs, ys, strict=True):
        font, size, bold, color, upright, turn = facts
        x0, top, x1, bottom = (float(v) for v in bbox)
        chars.append(
            {
                "adv": x1 - x0 if upright else bottom - top,
                "bottom": bottom,
                "doctop": top + doctop,
                "fontname": font,
                "height": bottom - top,
                "matrix": (*turn, x, y),
                "ncs": "DeviceRGB",
                "non_stroking_color": color,
                "non_stroking_pattern": None,
                "object_type": "char",
                "page_number": page_number,
                "size": size if upright else bottom - top,
                "stroking_color": color,
                "stroking_pattern": None,
                "bold": bold,
                "text": text,
                "top": top,
                "upright": upright,
                "width": x1 - x0,
                "x0": x0,
                "x1": x1,
                "y0": y0,
                "y1": y1,
            }
        )
    return textpage


def _outside(words: list[tuple[Any, ...]], rects: list[pymupdf.Rect]) -> list[tuple[Any, ...]]:
    """``words`` whose centre no rectangle holds, as MuPDF's ``fz_is_point_inside_rect``
    tells (single precision, the right and bottom edges outside)."""
    boxes = [tuple(rect) for rect in rects if not rect.is_empty]
    if not boxes or not words:
        return list(words)
    corners = np.array([word[:4] for word in words], dtype=np.float64)
    x = ((corners[:, 0] + corners[:, 2]) * 0.5).astype(np.float32)
    y = ((corners[:, 1] + corners[:, 3]) * 0.5).astype(np.float32)
    held = np.zeros(len(words), dtype=bool)
    for x0, y0, x1, y1 in np.array(boxes, dtype=np.float64).astype(np.float32):
        held |= (x >= x0) & (x < x1) & (y >= y0) & (y < y1)
    return [word for word, inside in zip(words, held.tolist(), strict=True) if not inside]


def _page_words(page: pymupdf.Page) -> list[tuple[float, float, float, float, str]]:
    """pymupdf._table_refine._refine_page_words: the page's words for grid refinement, those
    inside rotated spans replaced by the spans; kept on the page as pymupdf keeps them."""
    from pymupdf import _table_refine as refine

    kept = getattr(page, "_refine_words_cache", None)
    if kept is not None:
        return kept
    words = [
        (float(w[0]), float(w[1]), float(w[2]), float(w[3]), str(w[4]))
        for w in page.get_text("words")
        if str(w[4]).strip()
    ]
    rotated = [
        span
        for span in refine._refine_rawdict_spans(page)
        if refine._refine_is_vertical_or_rotated(span) and str(span.get("text") or "").strip()
    ]
    if rotated:
        rects = [pymupdf.Rect(span.get("bbox") or []) for span in rotated]
        words = _outside(words, rects)
        for span, rect in zip(rotated, rects, strict=True):
            if not rect.is_empty:
                x0, y0, x1, y1 = (float(v) for v in rect)
                words.append((x0, y0, x1, y1, str(span["text"])))
        words = sorted(words, key=lambda item: (item[1], item[0]))
    page._refine_words_cache = words
    return words


@contextmanager
def _cell_kinds_kept() -> Iterator[None]:
    """While the block runs, :data:`CELL_KINDS` answer a text asked before from memory."""
    from pymupdf import _table_headers as headers

    originals = {name: getattr(headers, name) for name in CELL_KINDS}
    for name, function in originals.items():
        setattr(headers, name, lru_cache(KEPT_CELL_TEXTS)(function))
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(headers, name, function)


@contextmanager
def bulk_table_steps() -> Iterator[None]:
    """While converting, pymupdf's table finder lists characters and page words in bulk (on
    the release checked; another keeps its own) and classifies a cell's text once."""
    from pymupdf import _table_refine as refine
    from pymupdf import table

    with _cell_kinds_kept():
        if pymupdf.__version__ != CHECKED_RELEASE:
            yield
            return
        make_chars, page_words = table.make_chars, refine._refine_page_words

        def chars(page: pymupdf.Page, clip: Any = None) -> pymupdf.TextPage:
            return _chars(page, clip, original=make_chars)

        table.make_chars, refine._refine_page_words = chars, _page_words
        try:
            yield
        finally:
            table.make_chars, refine._refine_page_words = make_chars, page_words
