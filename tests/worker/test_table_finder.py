"""pymupdf's table finder, with its characters and page words listed in bulk and its cells'
kinds kept, finds what pymupdf's own steps find: the same characters and words on any page,
and the same Markdown for a table page."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymupdf import _table_headers, _table_refine, table

from bucketdigest.worker.digesters.doc_to_markdown import converter, table_finder
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

ROWS = [
    ("Weapon", "Damage", "Cost", "Weight"),
    ("Halberd", "d10", "10 gp", "6 lb."),
    ("Crossbow", "d8", "25 gp", "5 lb."),
    ("Dagger", "d4", "2 gp", "1 lb."),
    ("Longbow", "d8", "50 gp", "2 lb."),
]


def _table_page(doc: pymupdf.Document, *, turned: int = 0) -> pymupdf.Page:
    """A table drawn with rules, a label set sideways beside it, a line of text under it."""
    page = doc.new_page()
    for row, cells in enumerate(ROWS):
        for column, cell in enumerate(cells):
            page.insert_text((80 + 110 * column, 95 + 25 * row), cell, fontsize=10)
    for y in range(78, 79 + 25 * len(ROWS), 25):
        page.draw_line((72, y), (512, y))
    for x in range(72, 513, 110):
        page.draw_line((x, 78), (x, 78 + 25 * len(ROWS)))
    page.insert_text((60, 190), "Armoury price list", fontsize=9, rotate=90)
    page.insert_text((72, 230), "Prices are those of the city armoury in spring.", fontsize=10)
    if turned:
        page.set_rotation(turned)
    return page


def _theirs_and_ours(page: pymupdf.Page) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """(pymupdf's characters, ours, pymupdf's page words, ours) of ``page``."""
    chars = table.CHARS._list()
    chars.clear()
    table.make_chars(page)
    theirs = list(chars)
    chars.clear()
    table_finder._chars(page, original=table.make_chars)
    ours = list(chars)
    chars.clear()
    their_words = _table_refine._refine_page_words(page)
    del page._refine_words_cache
    return theirs, ours, their_words, table_finder._page_words(page)


@pytest.mark.skipif(
    pymupdf.__version__ != table_finder.CHECKED_RELEASE, reason="pymupdf's own steps run"
)
@pytest.mark.parametrize("turned", [0, 90])
def test_characters_and_words_are_those_pymupdf_lists(turned: int) -> None:
    page = _table_page(pymupdf.open(), turned=turned)
    theirs, ours, their_words, our_words = _theirs_and_ours(page)
    assert theirs and ours == theirs
    assert our_words == their_words
    if not turned:  # the sideways label's words gave way to its span: that path ran
        assert "Armoury price list" in [w[4] for w in our_words]


@st.composite
def _pages(draw: st.DrawFn) -> pymupdf.Page:
    """A page of words at any place and size, some set sideways or upside down, in Latin,
    Greek and Cyrillic letters, symbols and spaces (some the base font has no glyph for)."""
    doc = pymupdf.open()
    page = doc.new_page(width=draw(st.integers(100, 400)), height=draw(st.integers(100, 400)))
    text = st.text(
        alphabet=st.characters(max_codepoint=0x52F, exclude_categories=("Cs", "Cc")),
        min_size=1,
        max_size=12,
    )
    for _ in range(draw(st.integers(1, 40))):  # crowded: sideways words cross others
        x = draw(st.floats(0, page.rect.width, allow_nan=False))
        y = draw(st.floats(0, page.rect.height, allow_nan=False))
        page.insert_text(
            (x, y),
            draw(text),
            fontsize=draw(st.floats(4, 30)),
            rotate=draw(st.sampled_from([0, 0, 0, 90, 180, 270])),
        )
    turned = draw(st.sampled_from([0, 0, 90, 180, 270]))
    if turned:
        page.set_rotation(turned)
    return page


@pytest.mark.skipif(
    pymupdf.__version__ != table_finder.CHECKED_RELEASE, reason="pymupdf's own steps run"
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pages())
def test_any_page_gives_the_characters_and_words_pymupdf_gives(page: pymupdf.Page) -> None:
    theirs, ours, their_words, our_words = _theirs_and_ours(page)
    assert ours == theirs
    assert our_words == their_words


def test_a_table_page_converts_as_with_pymupdf_own_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = pymupdf.open()
    _table_page(doc)
    source = tmp_path / "armoury.pdf"
    doc.save(source)
    originals = (table.make_chars, _table_refine._refine_page_words, _table_headers.cell_type)
    calls: list[str] = []
    chars, page_words = table_finder._chars, table_finder._page_words

    def counted_chars(*args: Any, **kwargs: Any) -> Any:
        calls.append("chars")
        return chars(*args, **kwargs)

    def counted_words(page: pymupdf.Page) -> Any:
        calls.append("words")
        return page_words(page)

    monkeypatch.setattr(table_finder, "_chars", counted_chars)
    monkeypatch.setattr(table_finder, "_page_words", counted_words)
    ours = converter.convert(source, "pdf", tmp_path / "ours", ConverterOptions())
    if pymupdf.__version__ == table_finder.CHECKED_RELEASE:
        assert "chars" in calls and "words" in calls  # the table finder ran on ours
    assert "|Halberd|d10|10 gp|6 lb.|" in ours.pages[0]
    assert (table.make_chars, _table_refine._refine_page_words, _table_headers.cell_type) == (
        originals  # pymupdf's own, put back after converting
    )

    monkeypatch.setattr(converter, "bulk_table_steps", contextlib.nullcontext)
    theirs = converter.convert(source, "pdf", tmp_path / "theirs", ConverterOptions())
    assert ours.pages == theirs.pages
