"""Where doc-to-markdown's time goes, step by step, on the real-world corpus's PDFs.

Each PDF goes through the chain's first digesters in this process with the default options a
user gets (doc-to-markdown, then search-keyword for ``document.json``), while a sampler thread
looks at the main thread's stack every few milliseconds. A sample counts for the innermost step
on the stack (the module of ours that was running, or pymupdf4llm's layout engine), weighted by
the time since the last sample, so a step called from inside another (the word-space check
inside the plain-page reading) counts for itself, not for its caller. Per step: the share of
doc-to-markdown's time, seconds, and pages per second (the corpus's pages over that step's
seconds: what the whole conversion would run at if the rest cost nothing). Time in MuPDF or
onnxruntime counts for the Python step that called it, but for MuPDF's text extraction, which
the converter and our checks of its text ask for alike: it is a step of its own. pymupdf's table
finder and the layout model's page-image network are steps of their own too.

``--every N`` takes every Nth file (the corpus in minutes); ``--quick`` uses generated PDFs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from common import table
from corpus import fetch

from bucketdigest.shared.archives import member_path
from bucketdigest.shared.filetypes import file_type
from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digester import DigestContext
from bucketdigest.worker.digesters import CHAIN

PACKAGE = "bucketdigest.worker.digesters.doc_to_markdown."
STEPS = {
    "page_engines": "page classifier",
    "plain_pages": "plain pages (text layer)",
    "layout_model": "layout model",
    "pymupdf4llm": "layout model",
    "scanned": "scans (OCR text layers)",
    "drawn_text": "drawn-text OCR",
    "drop_caps": "drop caps",
    "running": "running lines",
    "margins": "running lines",
    "headers": "heading levels",
    "tables": "tables",
    "word_spaces": "word spaces",
    "font_widths": "word spaces",
    "textlayer": "text layer (MuPDF)",
    "repair": "opening, repair",
    "tidy": "tidying",
    "after_converter": "tidying",
    "segmenting": "segmenting",
    "images": "images",
    "ranges": "page ranges (saving)",
}
"""Module (under doc_to_markdown, or a package's top name) → the step it is part of."""
PYMUPDF_STEPS = {
    "pymupdf.table": "tables",
    "pymupdf._table_headers": "tables",
    "pymupdf._table_union": "tables",
    "pymupdf.layout.onnx.TableGridExtractor": "tables",
    "pymupdf.layout.onnx.ImageFeatureExtractorV1": "layout model: its page-image network",
    "pymupdf.layout.pymupdf_util_imf": "layout model: its page-image network",
}
"""pymupdf's modules (or their prefix) that do a step of their own: the table finder the
converter calls on pages whose layout holds a table, and the network the layout model runs on a
page's image. Without them their time counts for the converter that called them."""
DOCUMENT_JSON = "document.json"
MUPDF_TEXT = "MuPDF's text extraction"
OTHER = "other (converter glue, MuPDF calls of ours)"
MEASURED = ("doc-to-markdown", "search-keyword")


def _extraction(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` (a TextPage extraction, in C) behind a Python frame the sampler knows: the
    text MuPDF extracts for the converter counts as such, not for the step that asked."""

    def extracting(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    return extracting


_EXTRACTING = _extraction(len).__code__
EXTRACTIONS = ("extractDICT", "extractRAWDICT", "extractWORDS")


def _mark_extraction() -> None:
    """Put :func:`_extraction` frames around MuPDF's text extraction, where the converter and
    the word-space check call it."""
    import pymupdf

    from bucketdigest.worker.digesters.doc_to_markdown import rtl, word_spaces

    for method in EXTRACTIONS:
        setattr(pymupdf.TextPage, method, _extraction(getattr(pymupdf.TextPage, method)))
    for module in (word_spaces, rtl):
        for name in (
            "_EXTRACT_DICT",
            "_EXTRACT_RAWDICT",
            "_EXTRACT_WORDS",
            "_READ_DICT",  # the extractions without pictures' pixels, bound at import
            "_READ_RAWDICT",
        ):
            if hasattr(module, name):
                setattr(module, name, _extraction(getattr(module, name)))


def _step(frame: FrameType | None) -> str | None:
    """The innermost step on ``frame``'s stack (None: outside the digesters measured)."""
    found, digester = None, None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if found is None:
            if frame.f_code is _EXTRACTING:
                found = MUPDF_TEXT
            elif module.startswith(PACKAGE):
                found = STEPS.get(module[len(PACKAGE) :])
            elif module.startswith("pymupdf."):
                found = next((s for m, s in PYMUPDF_STEPS.items() if module.startswith(m)), None)
            elif module.split(".")[0] == "pymupdf4llm":
                found = STEPS["pymupdf4llm"]
            elif module == "bucketdigest.worker.document_blocks":
                found = DOCUMENT_JSON
        if frame.f_code.co_name == "run" and module.startswith("bucketdigest.worker.digesters"):
            digester = module
        frame = frame.f_back
    if digester is None:
        return None
    if digester.endswith("search_keyword"):
        return DOCUMENT_JSON
    return found or OTHER


class Sampler:
    """Samples the main thread's stack every ``interval`` seconds into ``seconds`` by step."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.seconds: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        main = threading.main_thread().ident
        last = time.perf_counter()
        while not self._stop.wait(self.interval):
            now = time.perf_counter()
            step = _step(sys._current_frames().get(main))
            if step is not None:
                self.seconds[step] += now - last
            last = now


def _files(quick: bool, every: int, scratch: Path) -> list[Path]:
    if quick:
        return [make_pdf(scratch / f"g{i}.pdf", title=f"Gen {i}", pages=3, seed=i) for i in (1, 2)]
    pdfs = [path for path, _ in fetch() if path.suffix.lower() == ".pdf"]
    return pdfs[::every]


def _digest(path: Path, work: Path) -> tuple[int, float]:
    """(pages, seconds of doc-to-markdown) of one PDF through the digesters measured."""
    tree, scratch = work / "tree", work / "scratch"
    tree.mkdir()
    scratch.mkdir()
    ctx = DigestContext("0" * 64, path, file_type("pdf"), tree, scratch, DigestSettings())
    pages, converting = 0, 0.0
    for digester in CHAIN:
        if digester.name not in MEASURED or not digester.applies_to(ctx.file):
            continue
        started = time.perf_counter()
        try:
            produced = digester.run(ctx)
        except Exception as exc:  # a broken corpus file costs only its own row
            print(f"{path.name}: {digester.name} failed: {exc}", file=sys.stderr)
            return pages, converting
        if digester.name == "doc-to-markdown":
            converting = time.perf_counter() - started
            pages = int(produced["markdown"].content.get("pages", 0))
        for result in produced.values():
            for name, data in result.files.items():
                path = member_path(tree, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return pages, converting


def run(quick: bool, every: int = 2) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        files = _files(quick, every, Path(scratch))
        pages, converting = 0, 0.0
        _mark_extraction()
        with Sampler() as sampler:
            for n, path in enumerate(files):
                with tempfile.TemporaryDirectory(dir=scratch) as work:
                    counted, seconds = _digest(path, Path(work))
                pages, converting = pages + counted, converting + seconds
                print(f"{n + 1}/{len(files)} {path.name}: {counted} pages", file=sys.stderr)
    sampled = sum(s for step, s in sampler.seconds.items() if step != DOCUMENT_JSON)
    rows = []
    for step, seconds in sampler.seconds.most_common():
        share = f"{seconds / sampled:.0%}" if step != DOCUMENT_JSON else "(search-keyword)"
        rows.append((step, share, f"{seconds:.1f}", f"{pages / seconds:.1f}" if seconds else "-"))
    return (
        f"{len(files)} PDFs of the real-world corpus (one in {every}), "
        f"{pages} pages, one process, the default options; doc-to-markdown {converting:.0f} s "
        f"({pages / max(converting, 1e-9):.2f} pages/s), {sampled:.0f} s of it sampled. "
        "`python scripts/bench/steps.py`.\n\n"
        + table(("step", "share of doc-to-markdown", "seconds", "pages/s of the step"), rows)
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--every", type=int, default=2, help="every Nth corpus PDF")
    args = parser.parse_args()
    print(run(args.quick, args.every))
