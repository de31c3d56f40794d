"""The steps after the converter, each of which can cost only the page it fails on.

The converter's Markdown goes through steps of ours (:mod:`tidy` with :mod:`tables`,
:mod:`unmapped`, :mod:`running`, :mod:`headers`). Real PDFs hold every oddity Unicode allows,
so a step can meet a page it was not written for; that must never fail the document. A step
that raises on a page leaves that page as it was before the step, with a problem naming the
step and the page, and the other pages go through it as usual. Running out of memory is not a
page's fault: it propagates, as the converter's salvage lets it (:func:`is_out_of_memory`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from bucketdigest.worker.digesters.doc_to_markdown.headers import (
    ENCODED,
    PageHeaders,
    rank_headers,
)
from bucketdigest.worker.digesters.doc_to_markdown.running import Running, split_running
from bucketdigest.worker.digesters.doc_to_markdown.tidy import Lexicon, lexicon, tidy
from bucketdigest.worker.digesters.doc_to_markdown.unmapped import UNREADABLE, legible, unreadable
from bucketdigest.worker.sandbox import is_out_of_memory

Extra = TypeVar("Extra")
DocumentStep = Callable[[list[str]], tuple[list[str], list[Extra]]]

_MARKED = re.compile(r"^<!--running (?:header|footer)--> ?", re.MULTILINE)
_ENCODED_HEADER = re.compile(f"^#{{{ENCODED},}} ", re.MULTILINE)


@dataclass(frozen=True)
class Finished:
    """The pages as a result holds them, with what the steps took out of them."""

    pages: tuple[str, ...]
    running: tuple[Running, ...]
    headers: tuple[PageHeaders, ...]


def _failed(step: str, number: int, exc: Exception, problems: list[str]) -> None:
    if is_out_of_memory(exc):
        raise exc
    problems.append(
        f"page {number}: {step} failed ({type(exc).__name__}: {exc}); "
        "the page is left as it was before that step"
    )


def each_page(
    step: str, apply: Callable[[str], str], pages: Sequence[str], problems: list[str]
) -> list[str]:
    """``apply`` to each page; a page it raises on stays as it was (noted in ``problems``)."""
    done = []
    for number, page in enumerate(pages, start=1):
        try:
            done.append(apply(page))
        except Exception as exc:
            _failed(step, number, exc, problems)
            done.append(page)
    return done


def across_pages(
    step: str,
    apply: DocumentStep[Extra],
    pages: Sequence[str],
    problems: list[str],
    fallback: Callable[[str], tuple[str, Extra]],
) -> tuple[list[str], list[Extra]]:
    """``apply`` to the whole document (its pages inform each other); if it raises, the pages
    it raises on alone get ``fallback`` (noted in ``problems``) and the rest go through it
    together."""
    try:
        return apply(list(pages))
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
    good: list[int] = []
    for number, page in enumerate(pages):
        try:
            apply([page])
            good.append(number)
        except Exception as exc:
            _failed(step, number + 1, exc, problems)
    together: dict[int, tuple[str, Extra]] = {}
    try:
        texts, extras = apply([pages[n] for n in good])
        together = dict(zip(good, zip(texts, extras, strict=True), strict=True))
    except Exception:  # only the pages together fail: each goes through alone
        for number in good:
            texts, extras = apply([pages[number]])
            together[number] = (texts[0], extras[0])
    done = [together.get(n) or fallback(page) for n, page in enumerate(pages)]
    return [text for text, _ in done], [extra for _, extra in done]


def _legible(pages: list[str], problems: list[str]) -> list[str]:
    """``pages`` without the glyphs their fonts map to no character, and without the text of
    those whose text layer is mostly such glyphs, for page-ocr to read (:mod:`.unmapped`)."""
    lost = [number for number, page in enumerate(pages, start=1) if unreadable(page)]
    if lost:
        listed = ", ".join(map(str, lost[:20])) + (", ..." if len(lost) > 20 else "")
        problems.append(
            f"{len(lost)} of {len(pages)} pages: their fonts map {UNREADABLE:.0%} of the text "
            "or more to no character and the rest reads as no words, so page-ocr reads them "
            f"instead of the text layer: {listed}"
        )
    return each_page("unmapped glyphs", legible, pages, problems)


def _unmarked(page: str) -> tuple[str, Running]:
    """A page whose running lines could not be told: their text stays, their marks go."""
    return _MARKED.sub("", page), Running()


def _plain_headers(page: str) -> tuple[str, PageHeaders]:
    """A page whose header sizes could not be ranked: its headers as level 6."""
    return _ENCODED_HEADER.sub("###### ", page), []


def finished(pages: Sequence[str], keep_headers: bool, problems: list[str]) -> Finished:
    """The converted pages tidied, their running lines taken out (unless ``keep_headers``)
    and their headers ranked over the document; a step that fails on a page costs only that
    page that step."""
    try:
        known = lexicon(pages)
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
        known = Lexicon()
        problems.append(f"the document's word list failed ({type(exc).__name__}: {exc})")
    tidied = each_page("tidy", lambda page: tidy(page, known), pages, problems)
    tidied = _legible(tidied, problems)
    bodies, running = across_pages(
        "running lines",
        lambda some: split_running(some, keep_headers),
        tidied,
        problems,
        _unmarked,
    )
    ranked, headers = across_pages("header levels", rank_headers, bodies, problems, _plain_headers)
    return Finished(tuple(ranked), tuple(running), tuple(headers))
