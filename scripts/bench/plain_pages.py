"""doc-to-markdown with and without the plain-page path (``ConverterOptions.plain_pages``),
in the same run on the same files: every text PDF of the real-world corpus (``corpus.py``;
``pdftotext`` finds 20 words or more in it), each converted both ways in turn (which goes first
alternates, against the machine's drift). Per category: pages, the share read from their
text layer, pages per second both ways, and word recall against ``pdftotext`` both ways.
``--quick`` uses generated PDFs."""

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


def _converted(path: Path, plain: bool) -> tuple[float, int, int, str]:
    """(seconds, pages, pages read from their text layer, Markdown)."""
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        conversion = convert(path, "pdf", Path(work), ConverterOptions(plain_pages=plain))
        seconds = time.perf_counter() - started
    text_pages = sum(engine == "text" for engine in conversion.engines)
    return seconds, len(conversion.pages), text_pages, "\n\n".join(conversion.pages)


def run(quick: bool) -> str:
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    recalls: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {False: [], True: []})
    with tempfile.TemporaryDirectory() as scratch:
        for number, (path, category) in enumerate(_files(quick, Path(scratch))):
            reference = word_counts(
                subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True).stdout
            )
            if sum(reference.values()) < TEXT_MIN_WORDS:
                continue
            order = (False, True) if number % 2 else (True, False)
            try:
                done = {plain: _converted(path, plain) for plain in order}
            except Exception:
                continue
            for plain, (seconds, _, _, markdown) in done.items():
                row = totals[category]
                row["seconds plain" if plain else "seconds model"] += seconds
                recalls[category][plain].append(word_recall(markdown, reference))
            row["pages"] += done[True][1]
            row["text pages"] += done[True][2]
    rows = []
    every = defaultdict(float)
    for category, row in sorted(totals.items()):
        for key, value in row.items():
            every[key] += value
        rows.append(_row(category, row, recalls[category]))
    merged = {flag: [r for c in recalls.values() for r in c[flag]] for flag in (False, True)}
    rows.append(_row("all", every, merged))
    return (
        "Every text PDF of the real-world corpus converted by doc-to-markdown (default options, "
        "layout mode) without and with the plain-page path, one after the other in the same "
        "run; pages/s over the conversion time; word recall against `pdftotext` (mean per "
        "document):\n\n"
        + table(
            (
                "category",
                "pages",
                "read from text layer",
                "pages/s model only",
                "pages/s with plain pages",
                "speed-up",
                "recall model only",
                "recall with plain pages",
            ),
            rows,
        )
        + "\n"
    )


def _row(label: str, row: dict[str, float], recall: dict[bool, list[float]]) -> tuple[str, ...]:
    pages = row["pages"] or 1
    model, plain = pages / (row["seconds model"] or 1), pages / (row["seconds plain"] or 1)

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.3f}" if values else "-"

    return (
        label,
        f"{row['pages']:.0f}",
        f"{row['text pages'] / pages:.0%}",
        f"{model:.2f}",
        f"{plain:.2f}",
        f"{plain / model:.2f}x",
        mean(recall[False]),
        mean(recall[True]),
    )
