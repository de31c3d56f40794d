"""Scanned pages with a text layer ("sandwich" PDFs), made from pages of the real-world corpus
the way OCRmyPDF and office scanners make them: the page as one grey picture, Tesseract's
words laid over it as invisible text (``tesseract IMAGE OUT pdf``).

Real scans (a nineteenth-century novel's pages, one of them in two columns, a Senate
document, a printed web page, a brochure) are taken at their own resolution; born-digital
pages of books and papers (running heads, page numbers, two columns) are rendered in grey at
200 dpi and saved as JPEG first, as a scanner would. Facts name them ``derived/NAME.pdf``;
``make`` builds the ones asked for. Needs Tesseract (``scripts/setup.sh`` installs it); its
version is part of what these pages measure.

Each also comes as ``NAME-bookscan.pdf``, its layer made the way book-scanning OCR makes the
layers archives and libraries publish (Tesseract's words and boxes, laid down otherwise):
every word its own span in another face at its own size, fitted to the printed word's width,
on a baseline that wobbles by a point, the spaces spans of their own, each line laid down as
fragments in shuffled order.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

SCANS = {
    "huckleberry-finn-scan.pdf": ("ocrmypdf-16.5.0/tests/resources/c02-22.pdf", 1, 300),
    "two-cities-p5-scan.pdf": ("ocrmypdf-16.5.0/tests/resources/multipage.pdf", 5, 300),
    "two-cities-p6-scan.pdf": ("ocrmypdf-16.5.0/tests/resources/multipage.pdf", 6, 300),
    "senate-message-scan.pdf": ("pikepdf-9.11.0/tests/resources/congress.pdf", 1, 300),
    "ocr-printout-scan.pdf": ("ocrmypdf-16.5.0/tests/resources/epson.pdf", 1, 300),
    "clsguide-p5-scan.pdf": ("usr/share/doc/texlive-doc/latex/base/clsguide.pdf", 5, 200),
    "sigconf-p3-scan.pdf": (
        "usr/share/doc/texlive-doc/latex/acmart/samples/sample-sigconf.pdf",
        3,
        200,
    ),
    "testflow-p2-scan.pdf": ("usr/share/doc/texlive-doc/latex/ieeetran/testflow_doc.pdf", 2, 200),
}
"""Each made page: (its source's path in the corpus, page number, dpi)."""
BOOK_SCANS = {
    name.removesuffix("-scan.pdf") + "-bookscan.pdf": made for name, made in SCANS.items()
}
"""The same pages with a book scanner's layer."""
BOOK_SCAN_KIND = "scanned, a book scanner's text layer"


def _scan(source: Path, page: int, dpi: int, target: Path) -> None:
    import pymupdf

    with tempfile.TemporaryDirectory() as scratch, pymupdf.open(source) as doc:
        image = Path(scratch) / "page.jpg"
        pixmap = doc[page - 1].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        pixmap.set_dpi(dpi, dpi)
        pixmap.save(image, jpg_quality=70)
        subprocess.run(
            ["tesseract", str(image), str(target.with_suffix("")), "-l", "eng", "pdf"],
            check=True,
            capture_output=True,
        )


def _book_scan(source: Path, page: int, dpi: int, target: Path) -> None:
    import random

    import pymupdf

    rng = random.Random(target.name)
    with tempfile.TemporaryDirectory() as scratch, pymupdf.open(source) as doc:
        rect = doc[page - 1].rect
        image = Path(scratch) / "page.jpg"
        pixmap = doc[page - 1].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        pixmap.save(image, jpg_quality=70)
        tsv = subprocess.run(
            ["tesseract", str(image), "stdout", "-l", "eng", "tsv"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    lines: dict[tuple[str, ...], list[tuple[float, float, float, float, str]]] = {}
    scale = 72 / dpi
    for row in tsv.split("\n")[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        left, top, width, height = (float(v) * scale for v in cells[6:10])
        lines.setdefault(tuple(cells[2:5]), []).append(
            (left, top, width, height, cells[11].strip())
        )
    out = pymupdf.open()
    laid = out.new_page(width=rect.width, height=rect.height)
    laid.insert_image(laid.rect, pixmap=pixmap)
    # Laid down with Unicode (as those layers are): page.insert_text's base-14 fonts take
    # Latin-1 alone, and wrote every curly quote and dash Tesseract read as "·".
    face = pymupdf.Font("helv")
    writer = pymupdf.TextWriter(laid.rect)
    for words in lines.values():
        words.sort()
        spans = []
        for n, (left, top, width, height, text) in enumerate(words):
            spans.append((left, top + height, width, text))
            if n + 1 < len(words):
                gap = words[n + 1][0] - (left + width)
                spans.append((left + width, top + height, max(gap, 0.5), " "))
        cuts = (
            sorted(rng.sample(range(1, len(spans)), min(3, len(spans) - 1)))
            if len(spans) > 1
            else []
        )
        fragments = [spans[a:b] for a, b in zip([0, *cuts], [*cuts, len(spans)], strict=True)]
        rng.shuffle(fragments)
        for fragment in fragments:
            for x, baseline, width, text in fragment:
                unit = face.text_length(text, fontsize=1) or 1.0
                size = min(max(width / unit, 3.0), 72.0)
                writer.append(
                    (x, baseline - 0.15 * size + rng.uniform(-1.0, 1.0)), text,
                    font=face, fontsize=size,
                )  # fmt: skip
    writer.write_text(laid, render_mode=3)
    out.save(target)


def make(names: set[str], corpus: list[Path], folder: Path) -> dict[str, Path]:
    """The derived documents ``names`` (``derived/NAME.pdf``), built in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for doc in sorted(names):
        name = doc.removeprefix("derived/")
        if name not in SCANS and name not in BOOK_SCANS:
            raise SystemExit(f"{doc}: no such derived document (sandwiches.py)")
        path, page, dpi = SCANS.get(name) or BOOK_SCANS[name]
        matches = [p for p in corpus if p.as_posix().endswith("/" + path)]
        if not matches:
            raise SystemExit(f"{path}: not in the corpus (corpus.json)")
        target = folder / name
        (_book_scan if name in BOOK_SCANS else _scan)(matches[0], page, dpi, target)
        made[doc] = target
    return made
