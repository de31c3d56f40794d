"""Revisions: the CPU a new revision with 3 changed pages costs, incremental against from
scratch, for a text-layer book and a scanned book of 300 pages.

The text-layer book is the first 300 pages of the LaTeX3 interface manual (``interface3.pdf``
in the pinned ``texlive-latex-base-doc`` package of the real-world corpus); the revision adds an
erratum line to 3 pages. The scanned book is the same pages rendered to 150 dpi grey images
with no text layer (OCR'd), its revision re-rendered from the revised text. ``--quick`` makes a
2-page book instead (no download) and measures only its text-layer version. Each run is
``bucketdigest ingest`` then ``bucketdigest work --exit-when-idle`` with the default options;
CPU is user + system time of the worker and everything it started.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

import corpus
import pymupdf
from common import CLI, table

from bucketdigest.shared.samples import make_pdf

BOOK = ("texlive-latex-base-doc", "usr/share/doc/texlive-doc/latex/l3kernel/interface3.pdf")
BOOK_SHA256 = "92c7a75a1eb4f64c33b6a99427a397944cfc227221f261969f6b2c7416aa9cb1"
CHANGED = (40, 150, 260)
"""0-based pages the revision changes."""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _digest(bucket: Path, folder: Path) -> float:
    """Ingest ``folder`` into ``bucket`` and work until idle; CPU seconds of the work."""
    subprocess.run([*CLI, "ingest", str(folder), "--bucket", str(bucket)], check=True,
                   capture_output=True)  # fmt: skip
    before = _cpu()
    subprocess.run([*CLI, "work", "--bucket", str(bucket), "--exit-when-idle"], check=True,
                   capture_output=True)  # fmt: skip
    return _cpu() - before


def _books(root: Path, pages: int, quick: bool) -> dict[str, tuple[Path, Path]]:
    """Per kind, (first revision, second revision)."""
    if quick:
        source = make_pdf(root / "generated.pdf", title="Generated", pages=pages, seed=1)
    else:
        corpus.fetch()  # the pinned archives, unpacked and checked
        source = corpus.cache_dir() / "trees" / BOOK[0] / BOOK[1]
        if corpus.sha256(source) != BOOK_SHA256:
            raise SystemExit(f"{source}: not the pinned file (SHA-256 differs)")
    text = pymupdf.open(source)
    text.select(list(range(pages)))
    text.save(root / "text-v1.pdf", garbage=3)
    revised = pymupdf.open(root / "text-v1.pdf")
    for number in CHANGED[: max(1, pages // 100)]:
        revised[number % pages].insert_text(
            (72, 40), "Erratum: corrected in the second printing.", fontsize=9
        )
    revised.save(root / "text-v2.pdf", garbage=3)
    for version in ("v1", "v2"):
        scanned = pymupdf.open()
        for page in pymupdf.open(root / f"text-{version}.pdf"):
            image = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
            scanned.new_page(width=page.rect.width, height=page.rect.height).insert_image(
                page.rect, stream=image.tobytes("jpeg", jpg_quality=85)
            )
        scanned.save(root / f"scanned-{version}.pdf", garbage=3)
    return {
        kind: (root / f"{kind}-v1.pdf", root / f"{kind}-v2.pdf") for kind in ("text", "scanned")
    }


def _measure(root: Path, first: Path, second: Path) -> tuple[float, float]:
    """(CPU of the second revision from scratch, CPU of it after the first)."""
    folder = root / "source"
    folder.mkdir(parents=True)
    shutil.copy(second, folder / "book.pdf")
    scratch = _digest(root / "scratch-bucket", folder)
    shutil.copy(first, folder / "book.pdf")
    _digest(root / "bucket", folder)
    shutil.copy(second, folder / "book.pdf")
    incremental = _digest(root / "bucket", folder)
    return scratch, incremental


def run(quick: bool) -> str:
    pages = 2 if quick else 300
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        books = _books(root, pages, quick)
        for kind, (first, second) in books.items() if not quick else [("text", books["text"])]:
            scratch, incremental = _measure(root / kind, first, second)
            changed = len(CHANGED[: max(1, pages // 100)])
            rows.append(
                [
                    f"{kind}-layer book" if kind == "text" else "scanned book (OCR)",
                    str(pages),
                    str(changed),
                    f"{scratch:.1f}",
                    f"{incremental:.1f}",
                    f"{incremental / scratch:.1%}",
                ]
            )
    return table(
        [
            "document",
            "pages",
            "pages changed",
            "from scratch, CPU s",
            "new revision, CPU s",
            "share (target ≤ 15%)",
        ],
        rows,
    )
