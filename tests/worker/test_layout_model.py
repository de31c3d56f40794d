"""By default the layout model that sees a page's image reads only pages with pictures or
vector graphics; pages of text go to the one that reads their text layer alone."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.worker.digesters.doc_to_markdown import layout_model
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

ROWS = [("Weapon", "Damage", "Cost"), ("Halberd", "d10", "10 gp"), ("Crossbow", "d8", "25 gp")]
STORY = "The watch keeps its halberds in the gatehouse and its crossbows on the wall. " * 12


def _columns_then_table(path: Path) -> Path:
    """A page of two columns of text (not a plain page, nothing drawn), then a table drawn
    with rules."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 72, 290, 770), STORY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 72, 550, 770), STORY, fontsize=10)
    page = doc.new_page()
    for row, cells in enumerate(ROWS):
        for column, cell in enumerate(cells):
            page.insert_text((80 + 120 * column, 95 + 25 * row), cell, fontsize=10)
    for y in range(78, 154, 25):
        page.draw_line((72, y), (432, y))
    for x in range(72, 433, 120):
        page.draw_line((x, 78), (x, 153))
    doc.save(path)
    return path


def test_auto_shows_the_page_image_only_to_pages_with_drawings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    picked: list[str] = []
    pick = layout_model.features_for

    def recorded(page: pymupdf.Page) -> str:
        picked.append(pick(page))
        return picked[-1]

    monkeypatch.setattr(layout_model, "features_for", recorded)
    source = _columns_then_table(tmp_path / "mixed.pdf")
    conversion = convert(source, "pdf", tmp_path / "auto", ConverterOptions())
    assert picked == [layout_model.TEXT, layout_model.WITH_IMAGE]
    assert conversion.engines == ("layout", "layout")
    assert "|Halberd|d10|10 gp|" in conversion.pages[1]
    seeing = convert(
        source, "pdf", tmp_path / "image", ConverterOptions(layout_features="text+image")
    )
    assert picked == [layout_model.TEXT, layout_model.WITH_IMAGE]  # not asked again
    assert seeing.pages[1] == conversion.pages[1]


def test_an_unknown_feature_set_is_refused() -> None:
    with pytest.raises(ValueError, match="layout features must be one of"):
        ConverterOptions(layout_features="pixels")
