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
            "tags": list(self.tags),
            "snippet": self.snippet.text,
            "highlights": [list(span) for span in self.snippet.highlights],
        }
