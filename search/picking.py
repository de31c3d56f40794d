"""Which of a search's ranked passages are shown: each passage once, at most so many of a
document, and what was left out counted on what is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketdigest.search.filters import accepts
from bucketdigest.search.request import SearchRequest
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
    ``per_document`` of a document; a document's last pick counts its candidates not
    shown (``more``: past the cap or past the limit)."""
    rows = [candidates[offset] for offset, _ in ranked]
    picks: list[Pick] = []
    per_document: dict[str, list[Pick]] = {}
    left_out: dict[str, int] = {}
    for (offset, score), row in zip(ranked, rows, strict=True):
        if exact and not accepts(row, request):
            continue
        print_ = int(row["fingerprint"] or 0) if request.document is None else 0
        same = next((p for p in picks if near_duplicates(p.fingerprint, print_)), None)
        if same is not None:
            same.repeats += 1
            continue
        digest = row["digest"]
        mine = per_document.setdefault(digest, [])
        capped = bool(request.per_document) and len(mine) >= request.per_document
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
