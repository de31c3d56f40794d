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


def test_a_page_whose_text_model_regions_overlap_is_read_by_the_model_that_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asaetr.pdf p.1 (two columns, nothing drawn): the text-only model gave a "table" over
    the title and both columns with text regions inside it, and the page read line by line
    across its columns. Here the text model is made to answer so: the page goes to the model
    that sees it, whose reading is the page's."""
    import pymupdf.layout  # pymupdf's own model, activated

    source = _columns_then_table(tmp_path / "mixed.pdf")
    seeing = convert(
        source, "pdf", tmp_path / "image", ConverterOptions(layout_features="text+image")
    )
    sees = pymupdf._get_layout
    shown: list[int] = []

    def recorded(page: pymupdf.Page, **kwargs: object) -> object:
        shown.append(page.number)
        return sees(page, **kwargs)

    class Confused:
        """The text-only model, with a region over the whole page added to what it finds."""

        def __init__(self, model: object) -> None:
            self.model = model

        def predict(self, page: pymupdf.Page, **kwargs: object) -> list[object]:
            regions = list(self.model.predict(page, **kwargs))
            whole = [*page.rect]
            if kwargs.get("return_raw"):
                return [*regions, {"group_bbox": whole, "class_name": "table", "bboxes": []}]
            return [*regions, [*whole, "table"]]

    text_model = layout_model._model
    monkeypatch.setattr(pymupdf, "_get_layout", recorded)
    monkeypatch.setattr(layout_model, "_model", lambda features: Confused(text_model(features)))
    conversion = convert(source, "pdf", tmp_path / "auto", ConverterOptions())
    assert shown == [0, 1], "the page of text read again by the model that sees it"
    assert conversion.pages == seeing.pages


def test_regions_overlap_when_one_covers_most_of_another() -> None:
    assert layout_model.confused([[0, 0, 500, 300, "table"], [0, 200, 250, 290, "text"]])
    assert layout_model.confused([{"group_bbox": [0, 0, 10, 10]}, {"group_bbox": [1, 1, 9, 9]}])
    side_by_side = [[72, 100, 300, 700, "text"], [320, 100, 550, 700, "text"]]
    assert not layout_model.confused(side_by_side)
    assert not layout_model.confused([[0, 0, 100, 100, "text"], [90, 90, 200, 200, "text"]])


def test_an_unknown_feature_set_is_refused() -> None:
    with pytest.raises(ValueError, match="layout features must be one of"):
        ConverterOptions(layout_features="pixels")


def _banded(path: Path, figure: bool) -> Path:
    """Two columns, a full-width band (a caption under a drawn figure, or a paragraph), then
    two columns again: the layout of a paper's page with a wide figure."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((170, 60), "A Study of Layered Bands", fontsize=18, fontname="hebo")

    def column(rect: tuple[int, int, int, int], label: str, sentences: int) -> None:
        text = " ".join(
            f"{label} sentence {i} is about the matter at hand." for i in range(sentences)
        )
        assert page.insert_textbox(pymupdf.Rect(*rect), text, fontsize=9, fontname="tiro") >= 0

    column((50, 80, 300, 330), "Alpha", 13)
    page.insert_text((312, 92), "2 Methods", fontsize=12, fontname="tibo")
    column((312, 102, 562, 330), "Bravo", 9)
    if figure:
        page.draw_rect(pymupdf.Rect(50, 340, 562, 420), color=(0, 0, 0), fill=(0.8, 0.8, 0.9))
    wide = "Charlie wide band runs across the whole width of the page, under both columns. " * 2
    assert page.insert_textbox(pymupdf.Rect(50, 425, 562, 460), wide, fontsize=9) >= 0
    column((50, 470, 300, 740), "Delta", 14)
    column((312, 470, 562, 740), "Echo", 11)
    doc.save(path)
    return path


@pytest.mark.parametrize("figure", [False, True], ids=["text only", "with a figure"])
def test_columns_that_change_within_a_page_read_band_by_band(tmp_path: Path, figure: bool) -> None:
    source = _banded(tmp_path / "banded.pdf", figure)
    page = convert(source, "pdf", tmp_path / "out", ConverterOptions()).pages[0]
    marks = [
        "Layered Bands",
        "Alpha sentence 0",
        "Alpha sentence 12",
        "2 Methods",
        "Bravo sentence 0",
        "Bravo sentence 8",
        "Charlie wide",
        "Delta sentence 0",
        "Delta sentence 13",
        "Echo sentence 0",
        "Echo sentence 10",
    ]
    assert [page.find(mark) for mark in marks] == sorted(page.find(mark) for mark in marks)
    assert -1 not in [page.find(mark) for mark in marks]
