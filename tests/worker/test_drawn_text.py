"""Words a born-digital page shows as a picture, with no text layer there, are read and stand
where they stand on the page, with their OCR confidence."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

BODY = (
    "The committee met in the spring to weigh the yields of the turnip crop against the cost "
    "of bones, and found the crop ten times larger where bones were used. "
)


def _banner() -> bytes:
    """A title banner as a picture: large dark letters on a light ground."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=60)
    page.insert_text((12, 44), "HARVEST FORUM 2026", fontsize=34, fontname="hebo")
    return page.get_pixmap(dpi=150).tobytes("png")


def _poster(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_image(pymupdf.Rect(72, 60, 492, 120), stream=_banner())
    page.insert_textbox(pymupdf.Rect(72, 160, 523, 500), BODY * 8, fontsize=11, fontname="tiro")
    doc.save(path)


def test_a_banner_drawn_as_a_picture_is_read_before_the_text_under_it(tmp_path: Path) -> None:
    source = tmp_path / "poster.pdf"
    _poster(source)
    with pymupdf.open(source) as doc:
        assert "HARVEST" not in doc[0].get_text(), "no text layer over the banner"
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    page = conversion.pages[0]
    assert re.search(r"<!--drawn text, OCR confidence \d+--> HARVEST FORUM 2026", page)
    text = plain_text(page)
    assert text.index("HARVEST FORUM 2026") < text.index("The committee met")


def test_drawn_text_can_be_turned_off(tmp_path: Path) -> None:
    source = tmp_path / "poster.pdf"
    _poster(source)
    options = ConverterOptions(drawn_text=False)
    conversion = convert(source, "pdf", tmp_path / "work", options)
    assert "HARVEST" not in conversion.pages[0]


def _logo(ground: tuple[float, float, float] | None) -> bytes:
    """A header graphic: an emblem, a name in large letters and a small line under it, on a
    white ground or a coloured band (white letters)."""
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=70)
    ink = (0.1, 0.1, 0.1)
    if ground is not None:
        page.draw_rect(page.rect, color=None, fill=ground)
        ink = (1, 1, 1)
    page.draw_circle((35, 35), 28, color=None, fill=(0.9, 0.4, 0.1))
    page.draw_circle((35, 35), 14, color=None, fill=(1, 1, 1))
    page.insert_text((75, 36), "ACME ROBOTICS", fontsize=22, fontname="hebo", color=ink)
    page.insert_text((77, 55), "by Northwind Industries", fontsize=9, fontname="helv", color=ink)
    return page.get_pixmap(dpi=150).tobytes("png")


@pytest.mark.parametrize("ground", [None, (0.1, 0.2, 0.5)], ids=["white", "band"])
def test_the_small_line_of_a_logo_is_read_with_its_large_lettering(
    tmp_path: Path, ground: tuple[float, float, float] | None
) -> None:
    """Tesseract's page layout reads the large name and leaves the small line beside the
    emblem out; the strip of letters no word covers is read again."""
    source = tmp_path / "letterhead.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_image(pymupdf.Rect(40, 30, 250, 79), stream=_logo(ground))
    page.insert_textbox(pymupdf.Rect(72, 160, 523, 500), BODY * 8, fontsize=11, fontname="tiro")
    doc.save(source)

    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())

    text = plain_text(conversion.pages[0])
    assert "ACME ROBOTICS by Northwind Industries" in text
    assert text.index("Northwind") < text.index("The committee met")


def test_a_picture_in_colour_is_read_in_grey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tesseract's library read no word off some coloured lettering it read in grey (a
    conference banner in two blues), and reads grey faster: every region and strip of a
    picture in colour goes to it in grey, and its words are found."""
    from bucketdigest.worker.digesters.doc_to_markdown import drawn_text

    drawn_text._READ.clear()  # what an earlier test read of the same pixels
    components = []
    read_pixmap = drawn_text.read_pixmap

    def recorded(pixmap: pymupdf.Pixmap, *args: object) -> object:
        components.append(pixmap.n)
        return read_pixmap(pixmap, *args)

    monkeypatch.setattr(drawn_text, "read_pixmap", recorded)
    source = tmp_path / "letterhead.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_image(pymupdf.Rect(40, 30, 250, 79), stream=_logo((0.1, 0.2, 0.5)))
    page.insert_textbox(pymupdf.Rect(72, 160, 523, 500), BODY * 8, fontsize=11, fontname="tiro")
    doc.save(source)

    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())

    assert "ACME ROBOTICS" in plain_text(conversion.pages[0])
    assert components and set(components) == {1}


def _textured_banner() -> bytes:
    """A poster's banner as a photograph-like picture: white lettering over a dark ground that
    shades from one side to the other, grained with noise (no grey covers much of it)."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=150)
    for row, line in enumerate(["HARVEST FORUM", "RIVER VALLEY SHOW", "MAY 4 - MAY 9, 2026"]):
        page.insert_text((14, 38 + 44 * row), line, fontsize=30, fontname="hebo")
    letters = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    shape = (letters.height, letters.width)
    ink = np.frombuffer(letters.samples, dtype=np.uint8).reshape(shape) < 128
    ground = np.linspace(20, 120, shape[1])[None, :] + np.random.default_rng(7).normal(0, 12, shape)
    picture = np.where(ink, 245, np.clip(ground, 0, 255)).astype(np.uint8)
    return pymupdf.Pixmap(pymupdf.csGRAY, shape[1], shape[0], picture.tobytes(), False).tobytes()


def test_lettering_over_a_textured_ground_is_read(tmp_path: Path) -> None:
    """A banner with no flat ground (a photograph, a flag) is read when its rows cross many
    edges in bands like lines of letters."""
    source = tmp_path / "poster.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_image(pymupdf.Rect(72, 60, 492, 210), stream=_textured_banner())
    page.insert_textbox(pymupdf.Rect(72, 240, 523, 600), BODY * 8, fontsize=11, fontname="tiro")
    doc.save(source)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    text = plain_text(conversion.pages[0])
    assert "HARVEST FORUM" in text and "RIVER VALLEY SHOW" in text
    assert text.index("RIVER VALLEY SHOW") < text.index("The committee met")


@pytest.mark.parametrize(("left_out", "read_again"), [(2, 2), (7, 0)])
def test_strips_are_read_again_beside_lettering_not_across_a_screenshot(
    monkeypatch: pytest.MonkeyPatch, left_out: int, read_again: int
) -> None:
    """A picture whose page reading leaves a line or two out (a logo's small line) has them
    read again; one that leaves many out is a screenshot of small print, whose page reading
    is what it gives, at the cost of one reading."""
    from bucketdigest.worker.digesters.doc_to_markdown import drawn_text

    doc = pymupdf.open()
    page = doc.new_page(width=300, height=70)
    page.insert_image(page.rect, stream=_logo(None))
    strips = [pymupdf.IRect(150, 10 * n, 400, 10 * n + 8) for n in range(left_out)]
    monkeypatch.setattr(drawn_text, "_unread_strips", lambda grey, words: strips)
    blocks = []
    read_pixmap = drawn_text.read_pixmap

    def counted(*args: object, **kwargs: object) -> object:
        blocks.append(args[4] if len(args) > 4 else kwargs.get("layout", "page"))
        return read_pixmap(*args, **kwargs)

    monkeypatch.setattr(drawn_text, "read_pixmap", counted)

    found = drawn_text._read(page, page.rect, "eng")

    assert found is not None and "ACME ROBOTICS" in found.text
    assert blocks == ["region"] + ["block"] * read_again, "a picture is upright: no OSD"
