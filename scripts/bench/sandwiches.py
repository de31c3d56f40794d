"""Scanned pages with a text layer ("sandwich" PDFs), made from pages of the real-world corpus
the way OCRmyPDF and office scanners make them: the page as one grey picture, Tesseract's
words laid over it as invisible text (``tesseract IMAGE OUT pdf``).

Real scans (a nineteenth-century novel's pages, one of them in two columns, a Senate
document, a printed web page, a brochure) are taken at their own resolution; born-digital
pages of books and papers (running heads, page numbers, two columns) are rendered in grey at
200 dpi and saved as JPEG first, as a scanner would. Facts name them ``derived/NAME.pdf``;
``make`` builds the ones asked for. Needs Tesseract (``scripts/setup.sh`` installs it); its
version is part of what these pages measure.
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


def make(names: set[str], corpus: list[Path], folder: Path) -> dict[str, Path]:
    """The derived documents ``names`` (``derived/NAME.pdf``), built in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for doc in sorted(names):
        name = doc.removeprefix("derived/")
        if name not in SCANS:
            raise SystemExit(f"{doc}: no such derived document (sandwiches.py)")
        path, page, dpi = SCANS[name]
        matches = [p for p in corpus if p.as_posix().endswith("/" + path)]
        if not matches:
            raise SystemExit(f"{path}: not in the corpus (corpus.json)")
        target = folder / name
        _scan(matches[0], page, dpi, target)
        made[doc] = target
    return made
