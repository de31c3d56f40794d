"""Image blocks as the converter reads them: where an image stands and how large it is, not
its pixels.

``TextPage.extractDICT`` and ``extractRAWDICT`` give each image block its image's bytes. An
image stored other than as a whole image file (Flate, CCITT and JBIG2: most scans) has none to
give, so MuPDF decodes it and encodes it as a PNG: 50-150 ms for a scanned page's image, each
time the page is read, and for a 9,000-pixel square image 1.7 s and 470 MB. A conversion reads
a page's dict two or three times (pymupdf4llm, its layout model, our page checks) and takes
only the image blocks' boxes from it: pymupdf4llm writes a picture by rendering its part of the
page, and its OCR, which would read the bytes, is off (page-ocr does that). While converting,
image blocks come without their pixels: ``image`` empty, ``size`` 0, ``mask`` None; everything
else as MuPDF gives it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pymupdf
from pymupdf import mupdf


def _extension(image: Any) -> str:
    """The format MuPDF would give the image's bytes in: the stored file's, or PNG where it
    encodes them."""
    kind = image.fz_compressed_image_type()
    stored = mupdf.ll_fz_compressed_image_buffer(image.m_internal)
    if not stored or kind in (mupdf.FZ_IMAGE_JBIG2, mupdf.FZ_IMAGE_UNKNOWN):
        return "png"
    return "png" if kind < mupdf.FZ_IMAGE_BMP else str(pymupdf.JM_image_extension(kind))


Box = tuple[float, float, float, float]


def _image_block(found: dict[str, Any], block: Any) -> dict[str, Any]:
    """The dict MuPDF gives an image block, without the bytes (``found`` is the block as the
    dict gave it, read as a vector block: its number and box are the image's)."""
    image = block.i_image()
    transform = block.i_transform()
    return {
        "type": mupdf.FZ_STEXT_BLOCK_IMAGE,
        "number": found["number"],
        "bbox": found["bbox"],
        "width": image.w(),
        "height": image.h(),
        "ext": _extension(image),
        "colorspace": image.n(),
        "xres": image.xres(),
        "yres": image.yres(),
        "bpc": image.bpc(),
        "transform": (transform.a, transform.b, transform.c, transform.d, transform.e, transform.f),
        "size": 0,
        "image": b"",
        "mask": None,
    }


def _image_leaves(textpage: pymupdf.TextPage) -> list[Any]:
    """The page's image blocks in the order its dict lists them, inside structure blocks too
    (``TEXT_SEGMENT`` and ``TEXT_COLLECT_STRUCTURE`` nest blocks, as the layout model asks)."""
    found = []
    walk = mupdf.ll_fz_stext_page_block_iterator_begin_dfs(textpage.this.m_internal)
    while not mupdf.ll_fz_stext_page_block_iterator_eod_dfs(walk):
        if walk.block.type == mupdf.FZ_STEXT_BLOCK_IMAGE:
            found.append(walk.block)
        walk = mupdf.ll_fz_stext_page_block_iterator_next_dfs(walk)
    return found


def _box(block: Any) -> Box:
    return (block.bbox.x0, block.bbox.y0, block.bbox.x1, block.bbox.y1)


def _vector_blocks_at(blocks: list[dict[str, Any]], boxes: set[Box]) -> list[dict[str, Any]]:
    """The vector blocks of a dict's ``blocks`` (nested ones too, in order) whose box is one
    of ``boxes``."""
    found = []
    for block in blocks:
        if block["type"] == mupdf.FZ_STEXT_BLOCK_VECTOR and tuple(block["bbox"]) in boxes:
            found.append(block)
        found.extend(_vector_blocks_at(block.get("blocks", ()), boxes))
    return found


def without_pixels(extract: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``extract`` (``TextPage.extractDICT`` or ``extractRAWDICT`` as MuPDF has them) with the
    page's image blocks read without their pixels. MuPDF makes a block's dict by its type, so
    while ``extract`` runs the image blocks are marked as vector blocks (whose dict is their
    box, read from the block alone); their dicts are then made here from the image's header.
    Where the blocks read as vectors cannot be told from the page's own vector blocks (one of
    those on an image's very box) or one was left out (outside the text page's area), the page
    is read again as MuPDF reads it."""

    @functools.wraps(extract)
    def extracted(textpage: pymupdf.TextPage, *args: Any, **kwargs: Any) -> dict[str, Any]:
        images = _image_leaves(textpage)
        if not images:
            return extract(textpage, *args, **kwargs)
        for block in images:
            block.type = mupdf.FZ_STEXT_BLOCK_VECTOR
        try:
            page = extract(textpage, *args, **kwargs)
        finally:
            for block in images:
                block.type = mupdf.FZ_STEXT_BLOCK_IMAGE
        read_as_vectors = _vector_blocks_at(page["blocks"], {_box(block) for block in images})
        if [tuple(found["bbox"]) for found in read_as_vectors] != [_box(b) for b in images]:
            return extract(textpage, *args, **kwargs)
        for found, block in zip(read_as_vectors, images, strict=True):
            image = _image_block(found, mupdf.FzStextBlock(block))
            found.clear()
            found.update(image)
        return page

    return extracted
