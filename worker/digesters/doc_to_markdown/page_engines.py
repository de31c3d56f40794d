"""Which engine converts which page, and the mark each page carries while converting.

A scanned page with a text layer is read from that layer (:mod:`scanned`), a page set in
vertical lines column by column (:mod:`vertical`); in layout mode a
plain page (:mod:`plain_pages`) is converted from its text layer; the others go to
pymupdf4llm (its layout model in layout mode); each page's Markdown starts with a mark naming its
engine until the whole document is converted (the marks go through checkpoints with the
pages), and ``pages.json`` records them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pymupdf

from bucketdigest.shared.errors import DigestError
from bucketdigest.worker.digesters.doc_to_markdown.drawn_text import drawn_text, with_drawn_text
from bucketdigest.worker.digesters.doc_to_markdown.images import relative_images
from bucketdigest.worker.digesters.doc_to_markdown.margins import with_running_blocks
from bucketdigest.worker.digesters.doc_to_markdown.options import CONVERTER, ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.plain_pages import is_plain, plain_markdown
from bucketdigest.worker.digesters.doc_to_markdown.running import marked_page
from bucketdigest.worker.digesters.doc_to_markdown.scanned import is_scan_with_text, scan_markdown
from bucketdigest.worker.digesters.doc_to_markdown.vertical import is_vertical, vertical_markdown

FAST = "text"
LAYOUT = "layout"
SCAN = "scan"
"""A scanned page read from its text layer (:mod:`scanned`)."""
VERTICAL = "vertical"
"""A page set in vertical lines, read column by column (:mod:`vertical`)."""
GARBAGE = "garbage"
"""A scanned page whose text layer is garbage: only its image, for page-ocr to read."""
_ENGINE_MARK = re.compile(r"\A<!--converter (\w+)-->\n")


def engine_mark(engine: str) -> str:
    """The line a page's Markdown starts with while converting: the engine that made it
    (kept through checkpoints, taken off by :func:`engines_of`)."""
    return f"<!--converter {engine}-->\n"


def engines_of(pages: list[str]) -> tuple[list[str], list[str]]:
    """(each page's engine, the pages without their marks); a page without one (the plain
    text of a page the converter died on) counts as ``layout``'s."""
    engines, texts = [], []
    for page in pages:
        found = _ENGINE_MARK.match(page)
        engines.append(found.group(1) if found else LAYOUT)
        texts.append(page[found.end() :] if found else page)
    return engines, texts


def _pages_where(
    test: Callable[[pymupdf.Page], bool], doc: pymupdf.Document, numbers: list[int]
) -> set[int]:
    """The pages of ``numbers`` that pass ``test``; a page that cannot be read does not (the
    layout engine will say what is wrong with it)."""
    found = set()
    for number in numbers:
        try:
            if test(doc[number]):
                found.add(number)
        except Exception:
            continue
    return found


def pages_markdown(
    doc: pymupdf.Document, numbers: list[int], image_dir: Path, options: ConverterOptions
) -> list[str]:
    """The pages' Markdown, each behind the mark of the engine that made it: plain pages
    from their text layer (layout mode only), the others by pymupdf4llm."""
    import pymupdf4llm

    made = {}
    for n in _pages_where(is_scan_with_text, doc, numbers):
        image = (options.image_format, options.dpi) if options.write_images else None
        markdown, readable = scan_markdown(doc[n], image_dir, image)
        made[n] = engine_mark(SCAN if readable else GARBAGE) + relative_images(markdown, image_dir)
    for n in _pages_where(is_vertical, doc, [n for n in numbers if n not in made]):
        made[n] = engine_mark(VERTICAL) + vertical_markdown(doc[n])
    rest = [n for n in numbers if n not in made]
    plain = (
        _pages_where(is_plain, doc, rest)
        if options.mode == "layout" and options.plain_pages
        else set()
    )
    for n in plain:
        made[n] = engine_mark(FAST) + relative_images(plain_markdown(doc[n]), image_dir)
    rest = [n for n in rest if n not in plain]
    if rest:
        chunks = pymupdf4llm.to_markdown(
            doc,
            pages=rest,
            page_chunks=True,
            write_images=options.write_images,
            image_path=str(image_dir),
            image_format=options.image_format,
            dpi=options.dpi,
            filename="page",
            show_progress=False,
            **options.engine_options(),
        )
        if len(chunks) != len(rest):
            raise DigestError(f"{CONVERTER} returned {len(chunks)} of {len(rest)} pages")
        for number, chunk in zip(rest, chunks, strict=True):
            page = doc[number]
            markdown = with_running_blocks(page, marked_page(chunk))
            if options.drawn_text and options.mode == "layout":
                markdown = with_drawn_text(page, markdown, drawn_text(page, options.ocr_language))
            made[number] = engine_mark(LAYOUT) + relative_images(markdown, image_dir)
    return [made[n] for n in numbers]
