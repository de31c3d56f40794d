"""OCR readers on the scanned pages of the real-world corpus: Tesseract as it was (no
orientation detection), Tesseract as page-ocr runs it (with it, at 300 dpi) and at 250 and
200 dpi, PP-OCR (RapidOCR, the models
its wheel ships) alone, and page-ocr's choice per page (Tesseract, else PP-OCR where Tesseract
reads mostly noise of). Every page without a text layer of the "scanned and image"
category (the first five of a file); each reader in a process of its own, one after the other.
Per reader: seconds (render and read), peak memory (its process, Tesseract in it), pages with
trusted text, doubtful pages, the facts of ``facts.jsonl`` on those pages, and word recall on
the scans that come with their text (``linn.txt``). ``--quick``: generated scans."""

from __future__ import annotations

import multiprocessing
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from common import table
from corpus import fetch
from facts import check

from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.pagetext import word_counts, word_recall
from bucketdigest.worker.digesters.page_ocr import page_dpi, tesseract_pixmap, trusted_text

FACTS = Path(__file__).with_name("facts.jsonl")
PAGES_A_FILE = 5
READERS = {
    "tesseract-before": "Tesseract, no orientation detection (before)",
    "tesseract": "Tesseract with orientation detection (page-ocr's first reader)",
    "tesseract-250": "the same at 250 dpi",
    "tesseract-200": "the same at 200 dpi",
    "ppocr": "PP-OCR alone (RapidOCR 1.4.4)",
    "page-ocr": "page-ocr: Tesseract, else PP-OCR",
}

DPI = {"tesseract-250": 250, "tesseract-200": 200}
"""Readers at a lower resolution than page-ocr's 300 dpi: whether reading pages at the dpi their
text needs would pay (Tesseract's time goes mostly into reading lines, which it scales to one
height whatever the resolution)."""

Page = tuple[str, int]
"""(file, 0-based page number)."""


def _pages(quick: bool, scratch: Path) -> list[Page]:
    import pymupdf

    if quick:
        from bucketdigest.shared.samples import make_pdf

        text = pymupdf.open(make_pdf(scratch / "text.pdf", title="Quick", pages=1, seed=1))
        top = pymupdf.Rect(0, 0, text[0].rect.width, 250)  # title, a heading, a paragraph
        scan = pymupdf.open()
        page = scan.new_page(width=top.width, height=top.height)
        page.insert_image(page.rect, pixmap=text[0].get_pixmap(dpi=200, clip=top))
        scan.save(scratch / "scan.pdf")
        return [(str(scratch / "scan.pdf"), 0)]
    pages = []
    for path, category in fetch():
        if category != "scanned and image":
            continue
        try:
            doc = pymupdf.open(path)
            if doc.needs_pass:
                continue
            count = min(doc.page_count, PAGES_A_FILE)
            pages += [(str(path), n) for n in range(count) if not doc[n].get_text().strip()]
        except Exception:
            continue
    return pages


def _tesseract(pixmap: Any, orientation: bool) -> Any:
    from bucketdigest.worker.tesseract import read_pixmap, tessdata

    layout = "page" if orientation else "region"  # a region: no orientation detection
    return read_pixmap(pixmap, "eng", tessdata(), "tesseract", layout)


def _read(reader: str, pages: list[Page]) -> dict[str, Any]:
    """Run in a process of its own: every page's trusted text and doubt, seconds, peak MB."""
    import pymupdf

    from bucketdigest.worker import rapid_ocr

    texts: dict[str, str] = {}
    doubtful = 0
    seconds = 0.0
    for file, number in pages:
        page = pymupdf.open(file)[number]
        started = time.perf_counter()
        if reader == "ppocr":
            zoom = rapid_ocr.zoom(page.rect.width, page.rect.height)
            image = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom)).tobytes("png")
            text = rapid_ocr.read_image(image).trusted
        else:
            dpi = page_dpi(page.rect.width, page.rect.height, DPI.get(reader, 300))
            read = _tesseract(tesseract_pixmap(page, dpi), orientation=reader != "tesseract-before")
            if reader == "page-ocr":
                content: dict[str, Any] = {}
                text = trusted_text(page, number + 1, read, {}, content)
                doubtful += bool(content.get("doubtful"))
            else:
                text = "" if read.doubtful else read.trusted
                doubtful += read.doubtful
        seconds += time.perf_counter() - started
        texts[f"{file}#{number}"] = text
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    return {"texts": texts, "doubtful": doubtful, "seconds": seconds, "peak_mb": peak / 1024}


def _facts(pages: list[Page]) -> list[tuple[str, dict[str, Any]]]:
    """(page key, fact) for every fact on one of ``pages``."""
    found = []
    for fact in loads_lines(FACTS.read_text()):
        for file, number in pages:
            if file.endswith("/" + fact["doc"]) and fact["page"] == number + 1:
                found.append((f"{file}#{number}", fact))
    return found


def _recall(texts: dict[str, str]) -> str:
    """Mean word recall over the scans that come with their text (``NAME.txt``)."""
    scores = []
    for key, text in texts.items():
        file, number = key.rsplit("#", 1)
        reference = Path(file).with_suffix(".txt")
        if number == "0" and reference.is_file():
            scores.append(word_recall(text, word_counts(reference.read_text())))
    return f"{sum(scores) / len(scores):.3f} ({len(scores)})" if scores else "-"


def run(quick: bool) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        pages = _pages(quick, Path(scratch))
        facts = _facts(pages)
        rows = []
        spawn = multiprocessing.get_context("spawn")
        for reader, label in READERS.items():
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                got = pool.submit(_read, reader, pages).result()
            texts = got["texts"]
            passed = sum(check(fact, texts[key]).passed for key, fact in facts)
            rows.append(
                (
                    label,
                    len(pages),
                    f"{got['seconds']:.1f}",
                    f"{got['peak_mb']:.0f}",
                    sum(bool(text.strip()) for text in texts.values()),
                    got["doubtful"],
                    f"{passed}/{len(facts)}",
                    _recall(texts),
                )
            )
    return (
        "Every page without a text layer of the corpus's scanned and image category (the first "
        f"{PAGES_A_FILE} of a file), each reader in a process of its own on the same pages; "
        "seconds to render and read every page, peak resident memory of the reader's process "
        "(Tesseract's library inside it), pages given trusted text, pages left doubtful "
        "(mostly noise), the facts of `facts.jsonl` on these pages, word recall on scans that "
        "ship their text:\n\n"
        + table(
            (
                "reader",
                "pages",
                "seconds",
                "peak MB",
                "pages with text",
                "doubtful",
                "facts",
                "word recall",
            ),
            rows,
        )
        + "\n"
    )
