"""Page images rendered from a document's source, for the page view that highlights a hit."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.store import Store

PAGE_IMAGE_DPI = 110
"""Sharp enough to read on a screen, small enough to send (a letter page: ~935 by 1210)."""
PAGE_IMAGES_KEPT = 32
"""Page images a server keeps in memory."""


class NoPageImage(BucketdigestError):
    """The document has no page to show: no source in the bucket, not a paged document, or no
    such page."""


def render_page(store: Store, digest: str, page: int, dpi: int = PAGE_IMAGE_DPI) -> bytes:
    """Page ``page`` (1-based) of ``digest``'s source as a PNG."""
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
            pixmap = doc[page - 1].get_pixmap(dpi=dpi)
            return bytes(pixmap.tobytes("png"))
