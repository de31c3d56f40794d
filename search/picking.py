"""Which of a search's ranked passages are shown: each passage once, at most so many of a
document, and what was left out counted on what is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketdigest.search.filters import accepts
from bucketdigest.search.fusion import LEADING_DOCUMENT_MARGIN
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import near_duplicates


@dataclass
class Pick:
    """A ranked row chosen to be shown."""

    offset: int
    score: float
    fingerprint: int = 0
    digest: str = ""
    repeats: int = 0
    """Near-duplicates of it among the candidates (the same passage elsewhere)."""
    more: int = 0
    """Candidates of its document left out by the per-document cap (on its last pick)."""


def picked(
    ranked: list[tuple[int, float]],
    candidates: dict[int, dict[str, Any]],
    request: SearchRequest,
    exact: bool,
) -> list[Pick]:
    """The chunks to show, best first: those ``--source``/``--path`` accept, each passage
    once (a near-duplicate of one picked, on another page or in another document, counts
    as a repeat of it; a search of one document shows its every page) and at most
    ``per_document`` of a document, but for the passages of the document a hybrid search
    finds clearly first (:func:`leading_document`) ranked above every other document's; a
    document's last pick counts its candidates not shown (``more``: past the cap or past the
    limit)."""
    rows = [candidates[offset] for offset, _ in ranked]
    if exact:
        kept = [n for n, row in enumerate(rows) if accepts(row, request)]
        ranked, rows = [ranked[n] for n in kept], [rows[n] for n in kept]
    leader = leading_document(ranked, rows) if request.mode is Mode.HYBRID else None
    picks: list[Pick] = []
    per_document: dict[str, list[Pick]] = {}
    left_out: dict[str, int] = {}
    for (offset, score), row in zip(ranked, rows, strict=True):
        digest = row["digest"]
        if digest != leader:
            leader = None  # its passages past the cap end at another document's
        print_ = int(row["fingerprint"] or 0) if request.document is None else 0
        same = next((p for p in picks if near_duplicates(p.fingerprint, print_)), None)
        if same is not None:
            same.repeats += 1
            continue
        mine = per_document.setdefault(digest, [])
        capped = (
            bool(request.per_document) and digest != leader and len(mine) >= request.per_document
        )
        if capped or len(picks) >= request.limit:
            if mine:
                left_out[digest] = left_out.get(digest, 0) + 1
            continue
        pick = Pick(offset, score, print_, digest)
        picks.append(pick)
        mine.append(pick)
    for digest, count in left_out.items():
        per_document[digest][-1].more = count
    return picks


def leading_document(ranked: list[tuple[int, float]], rows: list[dict[str, Any]]) -> str | None:
    """The document of the first passage when it leads every other document's best passage by
    :data:`.fusion.LEADING_DOCUMENT_MARGIN` (or no other document has one): the question is
    about that document, and its answer may be the document's fourth passage or its eighth."""
    if not rows:
        return None
    first = rows[0]["digest"]
    runner_up = next(
        (score for (_, score), row in zip(ranked, rows, strict=True) if row["digest"] != first),
        None,
    )
    if runner_up is not None and ranked[0][1] - runner_up < LEADING_DOCUMENT_MARGIN:
        return None
    return first
