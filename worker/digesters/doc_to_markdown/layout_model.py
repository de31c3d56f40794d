"""Which of pymupdf's layout models reads a page: one that sees the page's text layer and an
image of it, or one that sees the text layer alone.

pymupdf ships both (``imf+rf``: region features of the text layer with features a small
network computes from the rendered page; ``rf``: the region features alone) and activates the
first. The page-image network is about a third of a layout page's time. On the fidelity bench
the model without it read every fact of text pages as the other does and lost facts only on a
form and a table drawn with rules (docs/benchmarks.md), so by default (``auto``) a page with
pictures or more than a few vector paths goes to the model that sees it, the others to the one
that reads its text. Models are made the first time they are asked for and kept.

Where the text-only model loses its way on a page, its regions overlap: on asaetr.pdf's first
page (two columns, nothing drawn) it gave a "table" over the title, the abstract and the top of
the second column, with text regions inside it and others across both columns, and the page
read line by line across the columns. The model that sees the page reads it as two columns
and, on the corpus's text pages whose regions overlapped, gave regions that do not overlap on
21 of 28. So such a page is read again by the model that sees it (:func:`confused`): about one
text page in fourteen on the corpus, which costs the page-image network on those pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.plain_pages import MAX_DRAWINGS

AUTO, WITH_IMAGE, TEXT = "auto", "text+image", "text"
_FEATURE_SETS = {TEXT: "rf"}
"""What a model sees: pymupdf's name for its feature set (``imf+rf``, the one that sees the
page image, is pymupdf's own, made when it activates: not made twice)."""
_MODELS: dict[str, Any] = {}


def _model(features: str) -> Any:
    if features not in _MODELS:
        from pymupdf.layout import DocumentLayoutAnalyzer

        _MODELS[features] = DocumentLayoutAnalyzer.get_model(
            feature_set_name=_FEATURE_SETS[features]
        )
    return _MODELS[features]


OVERLAP = 0.5
"""Regions overlap when they share more than this share of the smaller one's area."""


def confused(regions: list[Any]) -> bool:
    """Whether two of ``regions`` overlap (:data:`OVERLAP`): as the model gives them
    (``[x0, y0, x1, y1, class]``) or raw, as pymupdf4llm asks for them (``group_bbox``)."""
    rects = [
        pymupdf.Rect(region["group_bbox"] if isinstance(region, dict) else region[:4])
        for region in regions
    ]
    for i, rect in enumerate(rects):
        for other in rects[i + 1 :]:
            smaller = min(rect.get_area(), other.get_area())
            if smaller > 0 and (rect & other).get_area() > OVERLAP * smaller:
                return True
    return False


def features_for(page: pymupdf.Page) -> str:
    """What the model ``auto`` picks needs to see of ``page``."""
    drawn = bool(page.get_images(full=False)) or len(page.get_cdrawings()) > MAX_DRAWINGS
    return WITH_IMAGE if drawn else TEXT


@contextmanager
def layout_model(features: str) -> Iterator[None]:
    """While converting, pages are read by the layout model that sees ``features`` of them
    (``auto``: :func:`features_for`)."""
    import pymupdf.layout  # activates pymupdf's own model, put back after

    activated = pymupdf._get_layout

    def reader(features: str) -> Any:
        return activated if features == WITH_IMAGE else _model(features).predict

    def by_page(page: pymupdf.Page, **kwargs: Any) -> Any:
        if features_for(page) == WITH_IMAGE:
            return activated(page, **kwargs)
        regions = _model(TEXT).predict(page, **kwargs)
        return activated(page, **kwargs) if confused(regions) else regions

    pymupdf._get_layout = by_page if features == AUTO else reader(features)
    try:
        yield
    finally:
        pymupdf._get_layout = activated
