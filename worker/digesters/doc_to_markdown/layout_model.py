"""Which of pymupdf's layout models reads a page: one that sees the page's text layer and an
image of it, or one that sees the text layer alone.

pymupdf ships both (``imf+rf``: region features of the text layer with features a small
network computes from the rendered page; ``rf``: the region features alone) and activates the
first. The page-image network is about a third of a layout page's time. On the fidelity bench
the model without it read every fact of text pages as the other does and lost facts only on a
form and a table drawn with rules (docs/benchmarks.md), so by default (``auto``) a page with
pictures or more than a few vector paths goes to the model that sees it, the others to the one
that reads its text. Models are made the first time they are asked for and kept.
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
        return reader(features_for(page))(page, **kwargs)

    pymupdf._get_layout = by_page if features == AUTO else reader(features)
    try:
        yield
    finally:
        pymupdf._get_layout = activated
