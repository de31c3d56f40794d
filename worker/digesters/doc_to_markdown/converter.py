"""PDF (and the other formats PyMuPDF opens) to Markdown with pymupdf4llm.

Imported only by the converter process: loading PyMuPDF costs over a second and ~100 MB, which
the CLI and the worker processes never need.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pymupdf

from bucketdigest.shared.archives import member_path
from bucketdigest.shared.pagetext import has_text, without_surrogates
from bucketdigest.worker.digesters.doc_to_markdown.after_converter import finished
from bucketdigest.worker.digesters.doc_to_markdown.aligned_columns import aligned_columns_as_tables
from bucketdigest.worker.digesters.doc_to_markdown.code_blocks import code_with_its_spaces
from bucketdigest.worker.digesters.doc_to_markdown.fingerprint import page_fingerprints
from bucketdigest.worker.digesters.doc_to_markdown.headers import sizes_as_levels
from bucketdigest.worker.digesters.doc_to_markdown.layout_model import layout_model
from bucketdigest.worker.digesters.doc_to_markdown.options import (
    CONVERTER,
    Conversion,
    ConverterOptions,
    KeptPage,
    PageKeeper,
    converter_version,
)
from bucketdigest.worker.digesters.doc_to_markdown.page_engines import (
    GARBAGE,
    SCAN,
    VERTICAL,
    engine_mark,
    engines_of,
    pages_markdown,
)
from bucketdigest.worker.digesters.doc_to_markdown.ranges import (
    IMAGES,
    commit_page,
    commit_range,
    converting,
    load_page,
    load_range,
    mark_converting,
    page_ranges,
    range_folder,
    range_images,
)
from bucketdigest.worker.digesters.doc_to_markdown.reading_order import columns_read_whole
from bucketdigest.worker.digesters.doc_to_markdown.repair import open_document, pdfium_texts
from bucketdigest.worker.digesters.doc_to_markdown.scanned import WORD_SHARE
from bucketdigest.worker.digesters.doc_to_markdown.segmenting import bounded_segmenting
from bucketdigest.worker.digesters.doc_to_markdown.table_finder import bulk_table_steps
from bucketdigest.worker.digesters.doc_to_markdown.tables import (
    html_tables_where_the_layout_has_them,
)
from bucketdigest.worker.digesters.doc_to_markdown.textlayer import plain_text, with_text_layer
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import (
    MeasuredPages,
    spaced_lines,
)
from bucketdigest.worker.sandbox import is_out_of_memory

_PARSER_BANNER = re.compile(r"^=== Document parser messages ===$", re.MULTILINE)


def _salvaged(
    doc: pymupdf.Document,
    numbers: list[int],
    image_dir: Path,
    options: ConverterOptions,
    source: Path,
    problems: list[str],
) -> list[str]:
    """Convert ``numbers``; if the converter raises, halve the range until the pages that
    fail are alone, and give those their plain text (noted in ``problems``).

    Running out of memory is not a page's fault: it propagates, so the worker reports the
    memory limit instead of quietly degrading the whole document to plain text."""
    try:
        return pages_markdown(doc, numbers, image_dir, options)
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
        if len(numbers) == 1:
            number = numbers[0] + 1
            problems.append(
                f"page {number}: {CONVERTER} failed ({type(exc).__name__}: {exc}); "
                "its plain text is used"
            )
            return [plain_text(doc, numbers[0], source)]
    middle = len(numbers) // 2
    return [
        *_salvaged(doc, numbers[:middle], image_dir, options, source, problems),
        *_salvaged(doc, numbers[middle:], image_dir, options, source, problems),
    ]


def _page_by_page(
    doc: pymupdf.Document,
    numbers: list[int],
    folder: Path,
    options: ConverterOptions,
    source: Path,
    died: list[int],
    problems: list[str],
) -> list[str]:
    """Convert ``numbers`` one page at a time, each kept as soon as it is done, after a process
    died converting ``died``: a page it died on alone gets its plain text instead (PDFium's,
    else MuPDF's), so a page that crashes or hangs the converter costs only itself."""
    pages = []
    for number in numbers:
        saved = load_page(folder, number)
        if saved is None:
            found: list[str] = []
            if died == [number]:
                texts = pdfium_texts(source) or ()
                text = texts[number] if number < len(texts) else plain_text(doc, number, source)
                found.append(
                    f"page {number + 1}: the converter crashed or ran out of time on it; "
                    "its plain text is used"
                )
            else:
                mark_converting(folder, [number])
                (text,) = _salvaged(doc, [number], folder / IMAGES, options, source, found)
            saved = (without_surrogates(text), found)
            commit_page(folder, number, *saved)
        pages.append(saved[0])
        problems += saved[1]
    return pages


def _numbers(numbers: list[int]) -> str:
    """Page numbers for a problem: ``3, 4, 9`` (the first twenty)."""
    return ", ".join(map(str, numbers[:20])) + (", ..." if len(numbers) > 20 else "")


def _listed(numbers: list[int]) -> str:
    """Pages for a problem: ``page 3``, ``pages 3, 4, 9``."""
    return f"page {_numbers(numbers)}" if len(numbers) == 1 else f"pages {_numbers(numbers)}"


def page_count(source: Path, ext: str) -> int:
    """The page count as MuPDF or, failing that, PDFium sees it (0 when neither can tell)."""
    try:
        with pymupdf.open(source, filetype=ext) as doc:
            if doc.page_count:
                return int(doc.page_count)
    except Exception:
        pass
    return len(pdfium_texts(source) or ()) if ext == "pdf" else 0


def _converted(
    doc: pymupdf.Document,
    numbers: list[int],
    folder: Path,
    options: ConverterOptions,
    source: Path,
    kept: dict[int, KeptPage],
) -> tuple[list[str], list[str], int]:
    """The range's pages, problems and how many pages were kept: kept pages as they were
    (their images written to the range's folder), the others converted. In legacy mode a
    page's Markdown depends on the pages converted with it (its header levels rank the
    range's font sizes), so there only a whole unchanged range is kept; layout mode ranks
    headers over the whole document afterwards (:mod:`headers`), so any page can be."""
    images = folder / IMAGES
    images.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    if options.mode != "layout" and not all(number in kept for number in numbers):
        kept = {}
    todo = [number for number in numbers if number not in kept]
    died = converting(folder)
    if died is not None:
        made = iter(_page_by_page(doc, todo, folder, options, source, died, problems))
    else:
        mark_converting(folder, todo)
        made = iter(_salvaged(doc, todo, images, options, source, problems) if todo else [])
    pages = []
    for number in numbers:
        if number in kept:
            pages.append(engine_mark(kept[number].engine) + kept[number].markdown)
            for name, data in kept[number].images.items():
                member_path(images, name).write_bytes(data)
        else:
            pages.append(without_surrogates(next(made)))
    return pages, problems, len(numbers) - len(todo)


def _in_ranges(
    doc: pymupdf.Document,
    options: ConverterOptions,
    source: Path,
    partial: Path,
    image_dir: Path,
    problems: list[str],
    kept: dict[int, KeptPage],
) -> tuple[list[str], int, int]:
    """Every page's Markdown, converted range by range and each range committed to
    ``partial``; ranges committed there before are reused, and so are ranges whose pages are
    all ``kept``. Returns (pages, pages reused from an earlier attempt, pages kept)."""
    pages: list[str] = []
    reused = taken = 0
    for numbers in page_ranges(doc.page_count, options.range_pages):
        folder = range_folder(partial, numbers)
        saved = load_range(folder, len(numbers))
        if saved is None:
            converted, found, count = _converted(doc, numbers, folder, options, source, kept)
            commit_range(folder, converted, found)
            taken += count
        else:
            converted, found = saved
            reused += len(numbers)
        pages += converted
        problems += found
        for image in range_images(folder):
            shutil.copyfile(image, image_dir / image.name)
    return pages, reused, taken


def convert(
    source: Path,
    ext: str,
    workdir: Path,
    options: ConverterOptions,
    partial: Path | None = None,
    keep: PageKeeper | None = None,
) -> Conversion:
    """Convert ``source`` into per-page Markdown, writing images into ``workdir/images``.
    Finished page ranges are kept in ``partial`` (default: inside ``workdir``) and reused;
    pages ``keep`` returns (from the fingerprints) are taken as they are."""
    messages = io.StringIO()
    pymupdf.set_messages(stream=messages)
    with contextlib.redirect_stdout(messages):
        import pymupdf4llm

        pymupdf4llm.use_layout(options.mode == "layout")
    image_dir = workdir / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    opened = open_document(source, ext, workdir)
    problems = list(opened.problems)
    reused = taken = 0
    fingerprints = None
    kept: dict[int, KeptPage] = {}
    converter = {"name": CONVERTER, "version": converter_version(), "options": options.as_dict()}
    engines: list[str] = []
    if opened.doc is None:
        pages = tuple(without_surrogates(text) for text in opened.texts)
        metadata: dict[str, Any] = {}
        converter = {"name": "pypdfium2", "fallback_for": converter}
    else:
        doc = opened.doc
        try:
            metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
            fingerprints = page_fingerprints(doc)
            if keep is not None and fingerprints is not None:
                kept = keep(fingerprints)
            measured: MeasuredPages = set()
            with (
                contextlib.redirect_stdout(messages),
                sizes_as_levels() if options.mode == "layout" else contextlib.nullcontext(),
                columns_read_whole() if options.mode == "layout" else contextlib.nullcontext(),
                aligned_columns_as_tables()
                if options.mode == "layout"
                else contextlib.nullcontext(),
                spaced_lines(measured) as fixes_failed,
                bounded_segmenting(),
                layout_model(options.layout_features)
                if options.mode == "layout"
                else contextlib.nullcontext(),
                html_tables_where_the_layout_has_them(),
                code_with_its_spaces() if options.mode == "layout" else contextlib.nullcontext(),
                bulk_table_steps(),
            ):
                converted, reused, taken = _in_ranges(
                    doc, options, source, partial or workdir / "ranges", image_dir, problems, kept
                )
            problems += dict.fromkeys(fixes_failed)
            engines, converted = engines_of(converted)
            from_layer = {
                n for n, engine in enumerate(engines) if engine in (SCAN, GARBAGE, VERTICAL)
            }
            pages = tuple(
                page.strip()
                for page in with_text_layer(doc, converted, problems, from_layer, measured)
            )
            garbage = [n for n, engine in enumerate(engines, start=1) if engine == GARBAGE]
            if garbage:
                problems.append(
                    f"{_listed(garbage)}: scanned with a text layer that reads as garbage "
                    f"(under {WORD_SHARE:.0%} words); page-ocr reads them instead"
                )
        finally:
            doc.close()
    done = finished(pages, options.keep_headers, problems)
    pages = done.pages
    textless = [n for n, page in enumerate(pages, start=1) if not has_text(page)]
    if textless:
        count = f"{len(textless)} of {len(pages)} pages"
        problems.append(f"{count} yielded no text (image-only or empty): {_numbers(textless)}")
    metadata["page_count"] = len(pages)
    return Conversion(
        pages=pages,
        image_dir=image_dir,
        metadata=metadata,
        converter={**converter, "engine": opened.engine},
        seconds=time.perf_counter() - started,
        messages=_PARSER_BANNER.sub("", messages.getvalue()).strip(),
        problems=tuple(problems),
        reused_pages=reused,
        fingerprints=tuple(fingerprints) if fingerprints is not None else None,
        headers=done.headers,
        running=done.running,
        kept_pages=taken,
        engines=tuple(engines),
    )
