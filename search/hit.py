"""A search hit, as every front end shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketdigest.search.snippet import Snippet


@dataclass(frozen=True)
class Hit:
    """One result: a chunk (with its page and headings) or a whole document."""

    digest: str
    score: float
    title: str
    names: tuple[str, ...]
    sources: tuple[str, ...]
    file_type: str
    tags: tuple[str, ...]
    snippet: Snippet
    page: int | None = None
    headings: tuple[str, ...] = ()
    chunk_id: str | None = None
    more: int = 0
    """Further passages of this document the search left out (at least this many; on the
    document's last hit): ask again with ``document`` set to see them."""
    repeats: int = 0
    """Passages elsewhere (other pages or documents) with the same text, counted once."""
    regions: tuple[dict[str, float], ...] = ()
    """Where the blocks that answer the query stand on their pages (PDF points, origin
    top-left; ``document.json``; :mod:`.focus`), for front ends that show them: the index
    does not hold them."""
    chunk_regions: tuple[dict[str, float], ...] = ()
    """Where the whole chunk stands."""
    focus: tuple[str, ...] = ()
    """The ids of the blocks that answer the query (``document.json``)."""

    @property
    def view(self) -> str | None:
        """The web page that shows the hit on its page, its passage highlighted and scrolled
        into view (a path of ``serve``)."""
        if self.page is None or self.chunk_id is None:
            return None
        focus = f"&blocks={','.join(self.focus)}" if self.focus else ""
        return f"/documents/{self.digest}/pages/{self.page}?chunk={self.chunk_id}{focus}#passage"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form shared by ``search --json`` and the HTTP API."""
        return {
            "digest": self.digest,
            "score": round(self.score, 6),
            "title": self.title,
            "names": list(self.names),
            "sources": list(self.sources),
            "file_type": self.file_type,
            "page": self.page,
            "headings": list(self.headings),
            "chunk_id": self.chunk_id,
            "more": self.more,
            "repeats": self.repeats,
            "regions": [dict(r) for r in self.regions],
            "chunk_regions": [dict(r) for r in self.chunk_regions],
            "answer_blocks": list(self.focus),
            "view": self.view,
            "tags": list(self.tags),
            "snippet": self.snippet.text,
            "highlights": [list(span) for span in self.snippet.highlights],
        }


def merged_hits(hits: list[Hit], more: list[Hit], limit: int) -> list[Hit]:
    """Two searches' hits best first, each passage once."""
    seen = {(hit.digest, hit.chunk_id) for hit in hits}
    extra = [hit for hit in more if (hit.digest, hit.chunk_id) not in seen]
    return sorted([*hits, *extra], key=lambda hit: -hit.score)[:limit]
