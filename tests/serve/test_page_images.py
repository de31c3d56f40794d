"""Page images sized for a screen or an assistant's context: the long side in pixels, PNG or
JPEG, whichever is smaller."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import PIL.Image
import pymupdf
import pytest

from bucketdigest.serve.page_images import NoPageImage, render_page
from bucketdigest.shared import keys
from bucketdigest.shared.stores.local import LocalStore

A4 = pymupdf.paper_rect("a4")


def _stored(store: LocalStore, doc: pymupdf.Document) -> str:
    data = doc.tobytes()
    digest = hashlib.sha256(data).hexdigest()
    store.put(keys.raw_key(digest, "pdf"), data)
    return digest


def _photo_page(doc: pymupdf.Document) -> None:
    """An A4 page of text with a photograph-like picture (smooth shading with grain)."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:900, 0:1200]
    shade = np.stack([x / 5, y / 4, (x + y) / 9], axis=-1) % 256
    pixels = np.clip(shade + rng.normal(0, 12, shade.shape), 0, 255).astype(np.uint8)
    picture = io.BytesIO()
    PIL.Image.fromarray(pixels).save(picture, format="PNG")
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_textbox(pymupdf.Rect(60, 60, 535, 300), "The harbour at dawn. " * 60)
    page.insert_image(pymupdf.Rect(60, 320, 535, 700), stream=picture.getvalue())


def test_a4_pages_at_the_default_size_fit_an_assistants_context(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    doc = pymupdf.open()
    _photo_page(doc)
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_textbox(pymupdf.Rect(60, 60, 535, 780), "Roll for initiative. " * 200)
    digest = _stored(store, doc)
    for number in (1, 2):
        image = render_page(store, digest, number)
        shown = PIL.Image.open(io.BytesIO(image.data))
        assert shown.format.lower() == image.format and image.media_type == f"image/{image.format}"
        assert max(shown.size) == 1000 and shown.size == (image.width, image.height)
        assert len(image.data) < 300_000, (number, image.format, len(image.data))
    assert render_page(store, digest, 1).format == "jpeg", "the photograph: JPEG is smaller"
    large = render_page(store, digest, 2, long_side=2400)
    assert max(PIL.Image.open(io.BytesIO(large.data)).size) == 2400


def test_a_page_the_document_lacks_is_named(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    doc = pymupdf.open()
    _photo_page(doc)
    digest = _stored(store, doc)
    with pytest.raises(NoPageImage, match="has 1 pages, not page 3"):
        render_page(store, digest, 3)
