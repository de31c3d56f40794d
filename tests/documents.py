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


def scribbled_pdf(path: Path, seed: int = 3) -> Path:
    """A page of pen strokes in lines, like handwriting no OCR engine reads: no text layer."""
    import random

    rng = random.Random(seed)
    doc = pymupdf.open()
    page = doc.new_page()
    shape = page.new_shape()
    for line in range(12):
        y, x = 80 + line * 40, 60.0
        while x < 520:
            points = [(x + i * 3, y + rng.uniform(-8, 8)) for i in range(rng.randint(4, 12))]
            shape.draw_polyline(points)
            x = points[-1][0] + rng.uniform(6, 14)
    shape.finish(color=(0, 0, 0), width=1.2)
    shape.commit()
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path
