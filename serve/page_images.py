"""Page images rendered from a document's source, for the page view that highlights a hit."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.store import Store

PAGE_IMAGE_PIXELS = 1000
"""Pixels on a page image's long side unless asked: sharp enough to read on a screen or by a
vision model (a letter page: 773 by 1000), small enough to send."""
MAX_PAGE_IMAGE_PIXELS = 4000
MIN_PAGE_IMAGE_PIXELS = 100
PAGE_IMAGES_KEPT = 32
"""Page images a server keeps in memory."""
JPEG_QUALITY = 85


class NoPageImage(BucketdigestError):
    """The document has no page to show: no source in the bucket, not a paged document, or no
    such page."""


@dataclass(frozen=True)
class PageImage:
    """A rendered page, as PNG or JPEG: whichever encodes it in fewer bytes (text and line art
    as PNG, photographs and scans as JPEG)."""

    data: bytes
    format: str
    width: int
    height: int

    @property
    def media_type(self) -> str:
        return f"image/{self.format}"


def render_page(
    store: Store, digest: str, page: int, long_side: int = PAGE_IMAGE_PIXELS
) -> PageImage:
    """Page ``page`` (1-based) of ``digest``'s source, ``long_side`` pixels on its long side."""
    import pymupdf

    sources = list(store.list(keys.raw_prefix(digest), limit=1))
    if not sources:
        raise NoPageImage(f"{digest}: its source is not in the bucket, so no page image")
    with tempfile.TemporaryDirectory(prefix="bucketdigest-page-") as scratch:
        local = Path(scratch) / Path(sources[0].key).name
        store.download(sources[0].key, local)
        try:
            doc = pymupdf.open(local)
        except Exception as exc:
            raise NoPageImage(f"{digest}: its source has no pages to show ({exc})") from exc
        with doc:
            if not doc.is_pdf and not doc.page_count:
                raise NoPageImage(f"{digest}: its source has no pages to show")
            if not 1 <= page <= doc.page_count:
                raise NoPageImage(f"{digest} has {doc.page_count} pages, not page {page}")
            shown = doc[page - 1]
            zoom = long_side / max(shown.rect.width, shown.rect.height, 1.0)
            pixmap = shown.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            encoded = [
                (bytes(pixmap.tobytes("png")), "png"),
                (bytes(pixmap.tobytes("jpeg", jpg_quality=JPEG_QUALITY)), "jpeg"),
            ]
            data, kind = min(encoded, key=lambda pair: len(pair[0]))
            return PageImage(data, kind, pixmap.width, pixmap.height)
