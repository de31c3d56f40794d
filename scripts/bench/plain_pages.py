"""doc-to-markdown against bare pymupdf4llm and against its layout model alone, in the same
run on the same files: every text PDF of the real-world corpus (``corpus.py``; ``pdftotext``
finds 20 words or more in it), each converted three ways in turn (the order rotates, against
the machine's drift). Bare pymupdf4llm is the converter as doc-to-markdown used it before the
fidelity work (layout mode, images written, no OCR). "Model only" is doc-to-markdown with
every page read by the layout model that sees the page image (``--no-plain-pages
--layout-features text+image``: its defaults before the cost-per-page work). "Default" is what
a user gets: plain pages from their text layer (:mod:`plain_pages`), other pages without
pictures or drawings by the model that reads their text alone (:mod:`layout_model`). Per
category: pages, the share read from their text layer, pages per second each way, and word
recall against ``pdftotext`` each way; and all files but the one bare pymupdf4llm took longest
over (a page it takes minutes over dominates the sum: :mod:`segmenting`). ``--quick`` uses
generated PDFs."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from common import table
from corpus import fetch

from bucketdigest.shared.pagetext import word_counts, word_recall
from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

TEXT_MIN_WORDS = 20


def _files(quick: bool, scratch: Path) -> list[tuple[Path, str]]:
    if not quick:
        return [(path, category) for path, category in fetch() if path.suffix.lower() == ".pdf"]
    return [
        (make_pdf(scratch / f"gen-{i}.pdf", title=f"Generated {i}", pages=3, seed=i), "generated")
        for i in range(2)
    ]


BARE, MODEL, DEFAULT = "bare", "model", "default"
WAYS = (BARE, MODEL, DEFAULT)
MODEL_ONLY = ConverterOptions(plain_pages=False, layout_features="text+image")


def _bare(path: Path, work: Path) -> tuple[int, int, str]:
    import pymupdf4llm

    pymupdf4llm.use_layout(True)
    chunks = pymupdf4llm.to_markdown(
        str(path),
        page_chunks=True,
        write_images=True,
        image_path=str(work),
        dpi=150,
        show_progress=False,
        use_ocr=False,
    )
    return len(chunks), 0, "\n\n".join(chunk["text"] for chunk in chunks)


def _converted(path: Path, way: str) -> tuple[float, int, int, str]:
    """(seconds, pages, pages read from their text layer, Markdown)."""
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        if way == BARE:
            pages, text_pages, markdown = _bare(path, Path(work))
        else:
            options = MODEL_ONLY if way == MODEL else ConverterOptions()
            conversion = convert(path, "pdf", Path(work), options)
            pages, markdown = len(conversion.pages), "\n\n".join(conversion.pages)
            text_pages = sum(engine == "text" for engine in conversion.engines)
        seconds = time.perf_counter() - started
    return seconds, pages, text_pages, markdown


Document = tuple[str, str, int, int, dict[str, float], dict[str, float]]
"""(file, category, pages, pages read from their text layer, seconds per way, recall per way)"""


def _documents(quick: bool) -> list[Document]:
    found = []
    with tempfile.TemporaryDirectory() as scratch:
        for number, (path, category) in enumerate(_files(quick, Path(scratch))):
            reference = word_counts(
                subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True).stdout
            )
            if sum(reference.values()) < TEXT_MIN_WORDS:
                continue
            order = WAYS[number % 3 :] + WAYS[: number % 3]
            try:
                done = {way: _converted(path, way) for way in order}
            except Exception:
                continue
            seconds = {way: done[way][0] for way in WAYS}
            recall = {way: word_recall(done[way][3], reference) for way in WAYS}
            pages, text_pages = done[DEFAULT][1], done[DEFAULT][2]
            found.append((path.name, category, pages, text_pages, seconds, recall))
    return found


def run(quick: bool) -> str:
    documents = _documents(quick)
    rows = [
        _row(category, [d for d in documents if d[1] == category])
        for category in sorted({d[1] for d in documents})
    ]
    rows.append(_row("all", documents))
    slowest = max(documents, key=lambda d: d[4][BARE], default=None)
    if slowest is not None:
        rows.append(_row(f"all but {slowest[0]}", [d for d in documents if d is not slowest]))
    return (
        "Every text PDF of the real-world corpus converted three ways, one after the other in "
        "the same run: bare pymupdf4llm (layout mode, images written, no OCR: the converter "
        "before the fidelity work); doc-to-markdown with every page read by the layout model "
        "that sees the page image (`--no-plain-pages --layout-features text+image`: its "
        'defaults before the cost-per-page work, "model only"); and doc-to-markdown\'s '
        "defaults (plain pages from their text layer, other pages without pictures or drawings "
        "by the model that reads their text alone). Pages/s over the conversion time; word "
        "recall against `pdftotext` (mean per document); the last row leaves out the file bare "
        "pymupdf4llm took longest over:\n\n"
        + table(
            (
                "category",
                "pages",
                "read from text layer",
                "pages/s bare pymupdf4llm",
                "pages/s model only",
                "pages/s default",
                "default / model only",
                "default / bare",
                "recall bare",
                "recall model only",
                "recall default",
            ),
            rows,
        )
        + "\n"
    )


def _row(label: str, documents: list[Document]) -> tuple[str, ...]:
    pages = sum(d[2] for d in documents) or 1
    speed = {way: pages / (sum(d[4][way] for d in documents) or 1) for way in WAYS}

    def mean(way: str) -> str:
        return f"{sum(d[5][way] for d in documents) / len(documents):.3f}" if documents else "-"

    return (
        label,
        f"{pages}",
        f"{sum(d[3] for d in documents) / pages:.0%}",
        f"{speed[BARE]:.2f}",
        f"{speed[MODEL]:.2f}",
        f"{speed[DEFAULT]:.2f}",
        f"{speed[DEFAULT] / speed[MODEL]:.2f}x",
        f"{speed[DEFAULT] / speed[BARE]:.2f}x",
        *(mean(way) for way in WAYS),
    )
