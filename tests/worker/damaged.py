"""Damaged PDFs of the kinds real collections hold, made from healthy generated ones."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pymupdf

from bucketdigest.shared.samples import make_pdf


def bad_page_count(path: Path) -> Path:
    """A page tree whose /Count is negative: MuPDF refuses it ("Invalid number of pages"),
    qpdf's recovery rebuilds it, PDFium reads it."""
    healthy = make_pdf(path.with_suffix(".healthy.pdf"), title="Damaged Rules", pages=3, seed=5)
    plain = path.with_suffix(".plain.pdf")
    with pymupdf.open(healthy) as doc:
        doc.save(plain, garbage=0, deflate=False, expand=255)
    data = re.sub(rb"/Count \d+", b"/Count -5", plain.read_bytes(), count=1)
    path.write_bytes(data)
    healthy.unlink()
    plain.unlink()
    return path


def poisoned_page(path: Path, pages: int = 3, poisoned: int = 2) -> Path:
    """A PDF whose page ``poisoned`` (1-based) draws an image declared 90,000 pixels square:
    pymupdf4llm raises on that page ("Overly large image"), MuPDF's plain text still reads it."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 100), f"Page {number} about poster rules and dragons", fontsize=14)
    page = doc[poisoned - 1]
    image = doc.get_new_xref()
    data = zlib.compress(b"\x00" * 1000)
    doc.update_object(
        image,
        "<< /Type /XObject /Subtype /Image /Width 90000 /Height 90000 /ColorSpace /DeviceGray "
        f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>",
    )
    doc.update_stream(image, data, compress=False)
    kind, resources = doc.xref_get_key(page.xref, "Resources")
    if kind == "xref":
        doc.xref_set_key(int(resources.split()[0]), "XObject", f"<< /Im9 {image} 0 R >>")
    else:
        doc.xref_set_key(page.xref, "Resources", f"<< /XObject << /Im9 {image} 0 R >> >>")
    contents = page.get_contents()[0]
    doc.update_stream(
        contents, doc.xref_stream(contents) + b"\nq 500 0 0 500 50 200 cm /Im9 Do Q\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def invisible_text_layer(path: Path) -> Path:
    """A page like an OCR'd scan: a visible heading, and its body only as invisible text
    (render mode 3, as OCR tools lay text over a page image), which the converter drops."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Scanned Rules", fontsize=20)
    body = "Knights charge across the drawbridge while archers guard the battlements. " * 3
    page.insert_textbox(pymupdf.Rect(72, 150, 520, 400), body, fontsize=11, render_mode=3)
    doc.save(path)
    return path
