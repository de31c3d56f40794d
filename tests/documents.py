"""Documents the tests make: a scanned page (text only as pixels)."""

from __future__ import annotations

from pathlib import Path

import pymupdf


def scanned_pdf(path: Path) -> Path:
    """A page of text rendered to a picture and placed in a PDF with no text layer."""
    text = pymupdf.open()
    page = text.new_page()
    page.insert_text((72, 100), "Rules of Battle", fontsize=28)
    page.insert_textbox(
        pymupdf.Rect(72, 140, 520, 400),
        "Dragons breathe fire once per round. Roll initiative before every battle.",
        fontsize=16,
    )
    scanned = pymupdf.open()
    scanned.new_page().insert_image(page.rect, pixmap=page.get_pixmap(dpi=200))
    path.parent.mkdir(parents=True, exist_ok=True)
    scanned.save(path)
    return path
