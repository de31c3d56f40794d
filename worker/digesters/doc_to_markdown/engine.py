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

import pymupdf

from bucketdigest.shared.errors import DigestError, PermanentDigestError
from bucketdigest.worker.digesters.doc_to_markdown.options import (
    CONVERTER,
    Conversion,
    ConverterOptions,
    converter_version,
)
from bucketdigest.worker.pagetext import has_text

_PARSER_BANNER = re.compile(r"^=== Document parser messages ===$", re.MULTILINE)


def _open(source: Path, ext: str) -> pymupdf.Document:
    if source.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    try:
        doc = pymupdf.open(source, filetype=ext)
    except (pymupdf.FileDataError, pymupdf.EmptyFileError, RuntimeError, ValueError) as exc:
        reason = str(exc).replace(f" '{source}'", "")  # our temporary path means nothing to users
        raise PermanentDigestError(f"not a readable {ext.upper()} file: {reason}") from exc
    if doc.needs_pass:
        doc.close()
        raise PermanentDigestError("the document is password-protected")
    if doc.page_count == 0:
        doc.close()
        raise PermanentDigestError("the document has no pages")
    return doc


def _relative_images(markdown: str, image_dir: Path, link_prefix: str) -> str:
    """pymupdf4llm links images by the path it wrote them to; make those links zip-relative."""
    return re.sub(re.escape(str(image_dir)) + r"/", link_prefix, markdown)


def _no_ocr(options: ConverterOptions) -> dict[str, bool]:
    """Layout mode OCRs text-less pages itself when an engine is installed; our page-ocr
    digester does that instead, so it is recorded and retried as its own output."""
    return {"use_ocr": False} if options.mode == "layout" else {}


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
    doc = _open(source, ext)
    try:
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        with contextlib.redirect_stdout(messages):
            chunks = pymupdf4llm.to_markdown(
                doc,
                page_chunks=True,
                write_images=options.write_images,
                image_path=str(image_dir),
                image_format=options.image_format,
                dpi=options.dpi,
                filename="page",
                show_progress=False,
                **_no_ocr(options),
            )
        page_count = doc.page_count
    except PermanentDigestError:
        raise
    except Exception as exc:
        raise DigestError(f"{CONVERTER} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        doc.close()
    pages = tuple(_relative_images(chunk["text"], image_dir, "images/") for chunk in chunks)
    textless = [n for n, page in enumerate(pages, start=1) if not has_text(page)]
    problems = []
    if len(pages) != page_count:
        problems.append(f"converter returned {len(pages)} of {page_count} pages")
    if textless:
        listed = ", ".join(map(str, textless[:20])) + (", ..." if len(textless) > 20 else "")
        count = f"{len(textless)} of {page_count} pages"
        problems.append(f"{count} yielded no text (image-only or empty): {listed}")
    metadata["page_count"] = page_count
    return Conversion(
        pages=pages,
        image_dir=image_dir,
        metadata=metadata,
        converter={"name": CONVERTER, "version": converter_version(), "options": options.as_dict()},
        seconds=time.perf_counter() - started,
        messages=_PARSER_BANNER.sub("", messages.getvalue()).strip(),
        problems=tuple(problems),
    )
