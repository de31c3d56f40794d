"""Pages whose vector paths would keep the layout model's text segmenter busy for minutes.

The layout model reads a page's text from a MuPDF text page made with ``TEXT_SEGMENT``, which
cuts the page into regions at its gaps. Its cost grows faster than the square of a page's
scattered vector paths: on a page of text with small marks strewn over it, 250 marks take
0.45 s, 1,000 take 7.5 s, and a vectorised scan with 18,560 paths (pypdf's ``issue-301.pdf``)
164 s, which the same page without segmenting reads in 0.4 s. A page with more than
:data:`MAX_SEGMENTED_PATHS` paths is read without it; the model still finds its blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pymupdf

MAX_SEGMENTED_PATHS = 300
"""Vector paths above which a page's text is not segmented: a table or a chart has fewer."""


@contextmanager
def bounded_segmenting() -> Iterator[None]:
    """While converting, the layout model reads pages with more than
    :data:`MAX_SEGMENTED_PATHS` vector paths without segmenting their text."""
    from pymupdf.layout import pymupdf_util_base

    create = pymupdf_util_base.create_stext_page

    def bounded(page: pymupdf.Page, flags: int) -> pymupdf.TextPage:
        if flags & pymupdf.TEXT_SEGMENT and len(page.get_cdrawings()) > MAX_SEGMENTED_PATHS:
            flags &= ~pymupdf.TEXT_SEGMENT
        return create(page, flags)

    pymupdf_util_base.create_stext_page = bounded
    try:
        yield
    finally:
        pymupdf_util_base.create_stext_page = create
