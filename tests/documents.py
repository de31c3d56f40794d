"""Documents the tests make as real ones come: a scanned page (text only as pixels), a page
in a font whose glyphs map to no character."""

from __future__ import annotations

from pathlib import Path

import pymupdf

RULES = "Dragons breathe fire once per round. Roll initiative before every battle."


def scanned_pdf(path: Path, rotate: int = 0, body: str = RULES) -> Path:
    """A page of text rendered to a picture and placed in a PDF with no text layer (turned by
    ``rotate`` degrees, as a page fed upside down into a scanner)."""
    text = pymupdf.open()
    page = text.new_page()
    page.insert_text((72, 100), "Rules of Battle", fontsize=28)
    page.insert_textbox(pymupdf.Rect(72, 140, 520, 700), body, fontsize=16)
    scanned = pymupdf.open()
    picture = page.get_pixmap(dpi=200)
    scanned.new_page().insert_image(page.rect, pixmap=picture, rotate=rotate)
    path.parent.mkdir(parents=True, exist_ok=True)
    scanned.save(path)
    return path


def chinese_scan_pdf(path: Path, lines: list[str]) -> Path:
    """Lines of Chinese set large in a picture, in a PDF with no text layer."""
    text = pymupdf.open()
    page = text.new_page()
    for number, line in enumerate(lines):
        page.insert_text((72, 120 + 60 * number), line, fontname="china-s", fontsize=28)
    scanned = pymupdf.open()
    scanned.new_page().insert_image(page.rect, pixmap=page.get_pixmap(dpi=150))
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


def printed_scan(lines: list[tuple[float, float, str]], size: float) -> pymupdf.Document:
    """A one-page document whose page is a scan of ``lines`` (x, baseline, text) printed in
    Times at ``size``: one picture, 100 dpi, for a text layer to be laid over."""
    printed = pymupdf.open()
    page = printed.new_page(width=432, height=648)
    for x, y, text in lines:
        page.insert_text((x, y), text, fontname="tiro", fontsize=size)
    scan = page.get_pixmap(dpi=100).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=648)
    page.insert_image(page.rect, stream=scan)
    return doc


def book_scan_pdf(path: Path, lines: list[tuple[float, float, str]], seed: int = 1) -> Path:
    """A page as book-scanning OCR lays its text over the scan (the layers archives and
    libraries publish), not as Tesseract's renderer does: the page printed in Times, then
    every word of the invisible layer its own span, in another face at its own size fitted to
    the printed word's width, on a baseline that wobbles by a point or two; the spaces spans of
    their own; each printed line laid down as fragments in shuffled order. ``lines``: (x,
    baseline, text) at 11 pt."""
    import random

    rng = random.Random(seed)
    doc = printed_scan(lines, 11)
    page = doc[0]
    space = pymupdf.get_text_length(" ", fontname="tiro", fontsize=11)
    for x, y, text in lines:
        spans: list[tuple[float, str]] = []
        for word in text.split(" "):
            spans.append((x, word))
            x += pymupdf.get_text_length(word, fontname="tiro", fontsize=11)
            spans.append((x, " "))
            x += space
        cuts = sorted(rng.sample(range(1, len(spans)), min(3, len(spans) - 1)))
        fragments = [spans[a:b] for a, b in zip([0, *cuts], [*cuts, len(spans)], strict=True)]
        rng.shuffle(fragments)
        for fragment in fragments:
            for start, word in fragment:
                printed_width = pymupdf.get_text_length(word, fontname="tiro", fontsize=11)
                laid_width = pymupdf.get_text_length(word, fontname="helv", fontsize=1) or 1
                size = max(printed_width / laid_width, 4.0)
                page.insert_text(
                    (start, y + rng.uniform(-1.5, 1.5)), word, fontname="helv",
                    fontsize=size, render_mode=3,
                )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def mislayered_pdf(path: Path, layer: str, body: str = RULES) -> Path:
    """A scanned page (:func:`scanned_pdf`) whose hidden text layer says ``layer``, not what
    the page shows: a bad OCR layer an earlier tool left."""
    scanned_pdf(path, body=body)
    doc = pymupdf.open(path)
    doc[0].insert_textbox(pymupdf.Rect(72, 140, 520, 700), layer, fontsize=16, render_mode=3)
    doc.saveIncr()
    return path


def unmapped_font_pdf(path: Path, text: str = RULES) -> Path:
    """A born-digital page set in a Type 3 font that maps its glyphs to no character, as old
    TeX and scanner fonts do: each glyph draws its letter (in Helvetica), but its code is a
    control character and its name none a glyph list knows, so the text layer reads as
    nothing while the page prints ``text``."""
    doc = pymupdf.open()
    page = doc.new_page(width=842, height=200)
    helvetica = doc.get_new_xref()
    doc.update_object(helvetica, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    letters = sorted(set(text))
    codes = {letter: code for code, letter in enumerate(letters, start=1)}
    procs = []
    for letter in letters:
        proc = doc.get_new_xref()
        doc.update_object(proc, "<< >>")
        escaped = letter.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        doc.update_stream(proc, f"600 0 d0 BT /H 1000 Tf ({escaped}) Tj ET".encode())
        procs.append(f"/glyph{codes[letter]}x {proc} 0 R")
    names = " ".join(f"{codes[letter]} /glyph{codes[letter]}x" for letter in letters)
    font = doc.get_new_xref()
    doc.update_object(
        font,
        "<< /Type /Font /Subtype /Type3 /FontBBox [0 -250 1000 1000]"
        " /FontMatrix [0.001 0 0 0.001 0 0]"
        f" /CharProcs << {' '.join(procs)} >>"
        f" /Encoding << /Type /Encoding /Differences [{names}] >>"
        f" /FirstChar 1 /LastChar {len(letters)} /Widths [{' '.join(['600'] * len(letters))}]"
        f" /Resources << /Font << /H {helvetica} 0 R >> >> >>",
    )
    doc.xref_set_key(page.xref, "Resources", f"<< /Font << /T3 {font} 0 R >> >>")
    shown = "".join(f"\\{codes[letter]:03o}" for letter in text)
    contents = doc.get_new_xref()
    doc.update_object(contents, "<< >>")
    doc.update_stream(contents, f"BT /T3 12 Tf 20 120 Td ({shown}) Tj ET".encode())
    doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path
