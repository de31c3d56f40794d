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
    """Where the chunk stands on its pages (PDF points, origin top-left; ``document.json``),
    for front ends that show it: the index does not hold them."""

    @property
    def view(self) -> str | None:
        """The web page that shows the hit on its page, highlighted (a path of ``serve``)."""
        if self.page is None or self.chunk_id is None:
            return None
        return f"/documents/{self.digest}/pages/{self.page}?chunk={self.chunk_id}"

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
            "view": self.view,
            "tags": list(self.tags),
            "snippet": self.snippet.text,
            "highlights": [list(span) for span in self.snippet.highlights],
        }
