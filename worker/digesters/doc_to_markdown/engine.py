"""PDF (and the other formats PyMuPDF opens) to Markdown with pymupdf4llm.

Imported only by the converter process: loading PyMuPDF costs over a second and ~100 MB, which
the CLI and the worker processes never need.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path
from typing import Any

import pymupdf

from bucketdigest.shared.errors import DigestError
from bucketdigest.worker.digesters.doc_to_markdown.options import (
    CONVERTER,
    Conversion,
    ConverterOptions,
    converter_version,
)
from bucketdigest.worker.digesters.doc_to_markdown.repair import open_document, pdfium_texts
from bucketdigest.worker.pagetext import has_text
from bucketdigest.worker.sandbox import is_out_of_memory

_PARSER_BANNER = re.compile(r"^=== Document parser messages ===$", re.MULTILINE)


def _relative_images(markdown: str, image_dir: Path, link_prefix: str) -> str:
    """pymupdf4llm links images by the path it wrote them to; make those links zip-relative."""
    return re.sub(re.escape(str(image_dir)) + r"/", link_prefix, markdown)


def _no_ocr(options: ConverterOptions) -> dict[str, bool]:
    """Layout mode OCRs text-less pages itself when an engine is installed; our page-ocr
    digester does that instead, so it is recorded and retried as its own output."""
    return {"use_ocr": False} if options.mode == "layout" else {}


def _markdown(
    doc: pymupdf.Document, numbers: list[int], image_dir: Path, options: ConverterOptions
) -> list[str]:
    import pymupdf4llm

    chunks = pymupdf4llm.to_markdown(
        doc,
        pages=numbers,
        page_chunks=True,
        write_images=options.write_images,
        image_path=str(image_dir),
        image_format=options.image_format,
        dpi=options.dpi,
        filename="page",
        show_progress=False,
        **_no_ocr(options),
    )
    if len(chunks) != len(numbers):
        raise DigestError(f"{CONVERTER} returned {len(chunks)} of {len(numbers)} pages")
    return [_relative_images(chunk["text"], image_dir, "images/") for chunk in chunks]


def _plain_text(doc: pymupdf.Document, number: int, source: Path) -> str:
    """A page's text without layout, by MuPDF, else by PDFium."""
    try:
        return str(doc[number].get_text())
    except MemoryError:
        raise
    except Exception:
        texts = pdfium_texts(source) or ()
        return texts[number] if number < len(texts) else ""


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
        return _markdown(doc, numbers, image_dir, options)
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
        if len(numbers) == 1:
            number = numbers[0] + 1
            problems.append(
                f"page {number}: {CONVERTER} failed ({type(exc).__name__}: {exc}); "
                "its plain text is used"
            )
            return [_plain_text(doc, numbers[0], source)]
    middle = len(numbers) // 2
    return [
        *_salvaged(doc, numbers[:middle], image_dir, options, source, problems),
        *_salvaged(doc, numbers[middle:], image_dir, options, source, problems),
    ]


def page_count(source: Path, ext: str) -> int:
    """The page count as MuPDF or, failing that, PDFium sees it (0 when neither can tell)."""
    try:
        with pymupdf.open(source, filetype=ext) as doc:
            if doc.page_count:
                return int(doc.page_count)
    except Exception:
        pass
    return len(pdfium_texts(source) or ()) if ext == "pdf" else 0


def convert(source: Path, ext: str, workdir: Path, options: ConverterOptions) -> Conversion:
    """Convert ``source`` into per-page Markdown, writing images into ``workdir/images``."""
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
    converter = {"name": CONVERTER, "version": converter_version(), "options": options.as_dict()}
    if opened.doc is None:
        pages = tuple(opened.texts)
        metadata: dict[str, Any] = {}
        converter = {"name": "pypdfium2", "fallback_for": converter}
    else:
        doc = opened.doc
        try:
            metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
            with contextlib.redirect_stdout(messages):
                pages = tuple(
                    _salvaged(
                        doc, list(range(doc.page_count)), image_dir, options, source, problems
                    )
                )
        finally:
            doc.close()
    textless = [n for n, page in enumerate(pages, start=1) if not has_text(page)]
    if textless:
        listed = ", ".join(map(str, textless[:20])) + (", ..." if len(textless) > 20 else "")
        count = f"{len(textless)} of {len(pages)} pages"
        problems.append(f"{count} yielded no text (image-only or empty): {listed}")
    metadata["page_count"] = len(pages)
    return Conversion(
        pages=pages,
        image_dir=image_dir,
        metadata=metadata,
        converter={**converter, "engine": opened.engine},
        seconds=time.perf_counter() - started,
        messages=_PARSER_BANNER.sub("", messages.getvalue()).strip(),
        problems=tuple(problems),
    )
