"""While converting, a page's dict gives its image blocks without their pixels (MuPDF would
decode each image and encode it as a PNG to give them) and everything else as MuPDF gives it;
the text page is left as it was, and a conversion still writes the page's pictures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from bucketdigest.worker.digesters.doc_to_markdown import image_blocks
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.image_blocks import without_pixels
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

BEFORE = "Before the pictures: the rules of the harvest."
AFTER = "After the pictures: the rules of the winter."
FLAGS = pymupdf.TEXTFLAGS_DICT | pymupdf.TEXT_PRESERVE_IMAGES | pymupdf.TEXT_COLLECT_VECTORS
NESTED = FLAGS | pymupdf.TEXT_SEGMENT | pymupdf.TEXT_COLLECT_STRUCTURE
"""As the layout model reads a page: blocks nested in structure blocks."""
PIXELS = ("image", "size", "mask")


def _page_with_pictures(path: Path) -> Path:
    """Text, a Flate picture with a soft mask (MuPDF re-encodes both), a JPEG picture, a
    rule and text again."""
    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 160), BEFORE, fontsize=11)
    translucent = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 600, 400), True)
    translucent.set_rect(translucent.irect, (200, 40, 40, 128))
    page.insert_image(pymupdf.Rect(72, 180, 372, 380), pixmap=translucent)
    opaque = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 300, 200), False)
    opaque.set_rect(opaque.irect, (30, 90, 200))
    page.insert_image(pymupdf.Rect(72, 400, 222, 500), stream=opaque.tobytes("jpeg"))
    page.draw_line((72, 520), (540, 520))
    page.insert_text((72, 550), AFTER, fontsize=11)
    document.save(path)
    return path


def _flat(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocks and the blocks nested in them, in order."""
    return [found for block in blocks for found in [block, *_flat(block.get("blocks", []))]]


def _without(blocks: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Blocks and the blocks nested in them, each without ``keys`` (nor its nested ones)."""
    return [
        {k: v for k, v in block.items() if k not in (*keys, "blocks")} for block in _flat(blocks)
    ]


@pytest.mark.parametrize("flags", [FLAGS, NESTED], ids=["flat", "nested"])
@pytest.mark.parametrize("extract", ["extractDICT", "extractRAWDICT"])
def test_image_blocks_come_without_pixels_and_the_rest_as_mupdf_gives_it(
    tmp_path: Path, extract: str, flags: int
) -> None:
    page = pymupdf.open(_page_with_pictures(tmp_path / "pictures.pdf"))[0]
    textpage = page.get_textpage(flags=flags)
    mupdf_reads = getattr(pymupdf.TextPage, extract)
    expected = mupdf_reads(textpage)
    images = [block for block in _flat(expected["blocks"]) if block["type"] == 1]
    assert len(images) == 2 and all(block["image"] for block in images)
    assert any(block["mask"] for block in images)
    assert {block["type"] for block in _flat(expected["blocks"])} >= {0, 1, 3}
    if flags == NESTED:
        assert not {block["type"] for block in expected["blocks"]} & {0, 1}

    read = without_pixels(mupdf_reads)(textpage)

    assert [block for block in _flat(read["blocks"]) if block["type"] == 1] == [
        {**block, "image": b"", "size": 0, "mask": None} for block in images
    ]
    assert _without(read["blocks"], PIXELS) == _without(expected["blocks"], PIXELS)
    assert {k: v for k, v in read.items() if k != "blocks"} == {
        k: v for k, v in expected.items() if k != "blocks"
    }
    assert mupdf_reads(textpage) == expected  # the text page's image blocks are images again


def test_a_rule_drawn_on_a_pictures_box_leaves_the_page_as_mupdf_reads_it(
    tmp_path: Path,
) -> None:
    """A vector block on an image's very box cannot be told from the image read as one: the
    page is read with the pixels rather than with a block mistaken."""
    document = pymupdf.open()
    page = document.new_page()
    box = pymupdf.Rect(72, 180, 372, 380)
    page.insert_image(box, pixmap=pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 40)))
    page.draw_rect(box, fill=(0.5, 0.5, 0.5))
    page.insert_text((72, 400), AFTER)
    textpage = document[0].get_textpage(flags=FLAGS)
    expected = textpage.extractDICT()
    assert [block["type"] for block in expected["blocks"]].count(3) >= 1
    assert without_pixels(pymupdf.TextPage.extractDICT)(textpage) == expected


def test_a_page_without_images_reads_as_mupdf_reads_it(tmp_path: Path) -> None:
    document = pymupdf.open()
    document.new_page().insert_text((72, 72), BEFORE)
    textpage = document[0].get_textpage(flags=FLAGS)
    assert without_pixels(pymupdf.TextPage.extractDICT)(textpage) == textpage.extractDICT()


def test_a_conversion_still_writes_the_pictures_between_the_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_without_pixels: list[int] = []

    def counted(found: dict[str, Any], block: Any) -> dict[str, Any]:
        read_without_pixels.append(found["number"])
        return made(found, block)

    made = image_blocks._image_block
    monkeypatch.setattr(image_blocks, "_image_block", counted)
    source = _page_with_pictures(tmp_path / "pictures.pdf")
    converted = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert read_without_pixels  # the converter read the page's images without their pixels
    (markdown,) = converted.pages
    assert markdown.index("harvest") < markdown.index("winter")
    written = sorted(path.name for path in converted.image_dir.iterdir())
    assert written, markdown
    linked = [name for name in written if name in markdown]
    assert linked and markdown.index("harvest") < markdown.index(linked[0]) < markdown.index(
        "winter"
    ), markdown
