"""doc-to-screenshot: a small PNG of the first page, for listings."""

from __future__ import annotations

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.result import THUMBNAIL
from bucketdigest.worker.digester import DigestContext, Digester, Produced


class DocToScreenshot(Digester):
    name = "doc-to-screenshot"
    label = "Thumbnail"
    description = "Renders the first page as a PNG whose longer side is 320 pixels."
    version = "1"
    outputs = ("thumbnail",)
    kinds = frozenset({FileKind.DOCUMENT, FileKind.IMAGE, FileKind.NOTEBOOK})

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        import pymupdf

        from bucketdigest.worker.digesters.doc_to_markdown.repair import open_pages

        with open_pages(ctx.source, ctx.file.ext, ctx.scratch) as doc:
            page = doc[0]
            longer = max(page.rect.width, page.rect.height) or 1.0
            zoom = ctx.settings.thumbnail_pixels / longer
            pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            png = pixmap.tobytes("png")
        content = {"page": 1, "width": pixmap.width, "height": pixmap.height}
        return {"thumbnail": Produced({THUMBNAIL: png}, content)}
