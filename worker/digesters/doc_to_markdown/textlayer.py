"""A page's own text layer: its plain text when the converter cannot give its Markdown, and
instead of Markdown that lost most of it (pymupdf4llm drops the invisible text of OCR'd scans,
and some vertical Japanese)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from bucketdigest.shared.pagetext import image_links, without_surrogates, word_counts, word_recall
from bucketdigest.worker.digesters.doc_to_markdown.repair import pdfium_texts
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import MeasuredPages, page_text

TEXT_LAYER_MIN_WORDS = 20
TEXT_LAYER_RECALL = 0.8
"""A page whose Markdown holds less than this share of its text layer's words gets the text
layer instead."""


def plain_text(doc: pymupdf.Document, number: int, source: Path) -> str:
    """A page's text without layout, by MuPDF, else by PDFium."""
    try:
        return page_text(doc[number])
    except MemoryError:
        raise
    except Exception:
        texts = pdfium_texts(source) or ()
        return texts[number] if number < len(texts) else ""


def with_text_layer(
    doc: pymupdf.Document,
    pages: list[str],
    problems: list[str],
    read_from_it: set[int],
    measured: MeasuredPages | None = None,
) -> list[str]:
    """``pages``, except those whose Markdown lost most of the page's own text layer: they
    get the text layer's plain text, followed by their image links (noted in ``problems``).
    Pages of ``read_from_it`` (0-based) were made from the text layer already; ``measured``
    is the conversion's (see :func:`.word_spaces.page_text`)."""
    kept, replaced = [], []
    for number, markdown in enumerate(pages):
        if number in read_from_it:
            kept.append(markdown)
            continue
        try:
            layer = without_surrogates(page_text(doc[number], measured)).strip()
        except MemoryError:
            raise
        except Exception:
            layer = ""
        words = word_counts(layer)
        if (
            sum(words.values()) >= TEXT_LAYER_MIN_WORDS
            and word_recall(markdown, words) < TEXT_LAYER_RECALL
        ):
            text = layer.replace("](", "\\](")  # printed, not a link (see images.py)
            kept.append("\n\n".join([text, *image_links(markdown)]))
            replaced.append(number + 1)
        else:
            kept.append(markdown)
    if replaced:
        listed = ", ".join(map(str, replaced[:20])) + (", ..." if len(replaced) > 20 else "")
        problems.append(
            f"{len(replaced)} of {len(pages)} pages: the Markdown kept under "
            f"{TEXT_LAYER_RECALL:.0%} of the text layer's words, so the plain text is used: "
            f"{listed}"
        )
    return kept
