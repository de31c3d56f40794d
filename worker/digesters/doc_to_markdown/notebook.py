"""Supernote ``.note`` notebooks: each page rendered (supernotelib) to a PNG, and the pages
gathered into a PDF of images in the job's scratch folder, so the digesters that render or
OCR pages (thumbnail, page-ocr) read a notebook as they read a scanned document."""

from __future__ import annotations

import io
from pathlib import Path

from bucketdigest.shared.errors import PermanentDigestError

PDF_NAME = "notebook.pdf"


def render_pages(source: Path) -> list[bytes]:
    """Every page of the notebook as PNG bytes; PermanentDigestError when it cannot be read."""
    import supernotelib
    from supernotelib.converter import ImageConverter

    if source.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    try:
        notebook = supernotelib.load_notebook(str(source))
        converter = ImageConverter(notebook)
        images = [converter.convert(n) for n in range(notebook.get_total_pages())]
    except Exception as exc:  # supernotelib raises its own and plain errors alike
        raise PermanentDigestError(
            "not a readable Supernote notebook: the file is damaged or truncated",
            detail=f"supernotelib: {type(exc).__name__}: {exc}",
        ) from exc
    if not images:
        raise PermanentDigestError("the notebook has no pages")
    pngs = []
    for image in images:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        pngs.append(buffer.getvalue())
    return pngs


def notebook_pdf(source: Path, scratch: Path) -> Path:
    """The notebook's pages as a PDF of images (made once per job)."""
    import pymupdf

    target = scratch / PDF_NAME
    if target.exists():
        return target
    doc = pymupdf.open()
    for png in render_pages(source):
        with pymupdf.open(stream=png, filetype="png") as image:
            rect = image[0].rect
        page = doc.new_page(width=rect.width, height=rect.height)
        page.insert_image(rect, stream=png)
    scratch.mkdir(parents=True, exist_ok=True)
    doc.save(target)
    doc.close()
    return target
