"""doc-to-markdown against bare pymupdf4llm, and with and without the plain-page path
(``ConverterOptions.plain_pages``), in the same run on the same files: every text PDF of the
real-world corpus (``corpus.py``; ``pdftotext`` finds 20 words or more in it), each converted
three ways in turn (the order rotates, against the machine's drift). Bare pymupdf4llm is the
converter as doc-to-markdown used it before the fidelity work (layout mode, images written,
no OCR): the "before" of the speed the fidelity issue asks to keep within 10%. Per category:
pages, the share read from their text layer, pages per second each way, and word recall
against ``pdftotext`` each way. ``--quick`` uses generated PDFs."""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import table
from corpus import fetch

from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.engine import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.pagetext import word_counts, word_recall

TEXT_MIN_WORDS = 20


def _files(quick: bool, scratch: Path) -> list[tuple[Path, str]]:
    if not quick:
        return [(path, category) for path, category in fetch() if path.suffix.lower() == ".pdf"]
    return [
        (make_pdf(scratch / f"gen-{i}.pdf", title=f"Generated {i}", pages=3, seed=i), "generated")
        for i in range(2)
    ]


BARE, MODEL, PLAIN = "bare", "model", "plain"
WAYS = (BARE, MODEL, PLAIN)


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
            options = ConverterOptions(plain_pages=way == PLAIN)
            conversion = convert(path, "pdf", Path(work), options)
            pages, markdown = len(conversion.pages), "\n\n".join(conversion.pages)
            text_pages = sum(engine == "text" for engine in conversion.engines)
        seconds = time.perf_counter() - started
    return seconds, pages, text_pages, markdown


def run(quick: bool) -> str:
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    recalls: dict[str, dict[str, list[float]]] = defaultdict(lambda: {way: [] for way in WAYS})
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
            row = totals[category]
            for way, (seconds, _, _, markdown) in done.items():
                row[f"seconds {way}"] += seconds
                recalls[category][way].append(word_recall(markdown, reference))
            row["pages"] += done[PLAIN][1]
            row["text pages"] += done[PLAIN][2]
    rows = []
    every = defaultdict(float)
    for category, row in sorted(totals.items()):
        for key, value in row.items():
            every[key] += value
        rows.append(_row(category, row, recalls[category]))
    merged = {way: [r for c in recalls.values() for r in c[way]] for way in WAYS}
    rows.append(_row("all", every, merged))
    return (
        "Every text PDF of the real-world corpus converted three ways, one after the other in "
        "the same run: bare pymupdf4llm (layout mode, images written, no OCR: the converter "
        "before the fidelity work), doc-to-markdown with its default options (layout mode), "
        "and doc-to-markdown with the plain-page path; pages/s over the conversion time; word "
        "recall against `pdftotext` (mean per document):\n\n"
        + table(
            (
                "category",
                "pages",
                "read from text layer",
                "pages/s bare pymupdf4llm",
                "pages/s default",
                "default / bare",
                "pages/s with plain pages",
                "plain / default",
                "recall bare",
                "recall default",
                "recall with plain pages",
            ),
            rows,
        )
        + "\n"
    )


def _row(label: str, row: dict[str, float], recall: dict[str, list[float]]) -> tuple[str, ...]:
    pages = row["pages"] or 1
    speed = {way: pages / (row[f"seconds {way}"] or 1) for way in WAYS}

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.3f}" if values else "-"

    return (
        label,
        f"{row['pages']:.0f}",
        f"{row['text pages'] / pages:.0%}",
        f"{speed[BARE]:.2f}",
        f"{speed[MODEL]:.2f}",
        f"{speed[MODEL] / speed[BARE]:.2f}x",
        f"{speed[PLAIN]:.2f}",
        f"{speed[PLAIN] / speed[MODEL]:.2f}x",
        *(mean(recall[way]) for way in WAYS),
    )
