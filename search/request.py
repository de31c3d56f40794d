"""What a search asks: the query, chunks or documents, the mode, how many hits, the filters;
and the bounds every front end checks it against (the CLI, the HTTP API, the MCP tools)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from bucketdigest.shared.errors import InvalidQuery

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 1000
PER_DOCUMENT = 3
"""Passages of one document a search shows before other documents' (the rest are one "more
from this document" away): a manual whose every page repeats the query's words would
otherwise fill every slot, and the document that answers would come after them."""


class Mode(StrEnum):
    HYBRID = "hybrid"
    KEYWORD = "keyword"
    SEMANTIC = "semantic"


class Level(StrEnum):
    CHUNKS = "chunks"
    DOCUMENTS = "documents"


@dataclass(frozen=True)
class SearchRequest:
    """A query and its options."""

    query: str
    level: Level = Level.CHUNKS
    mode: Mode = Mode.HYBRID
    limit: int = 10
    source: str | None = None
    """Only documents ingested from a source whose URL or path contains this text."""
    path: str | None = None
    """Only documents ingested under a path matching this glob (``*`` also matches ``/``)."""
    file_type: str | None = None
    tag: str | None = None
    document: str | None = None
    """Only passages of this document (its hash): "more from this document"."""
    per_document: int = PER_DOCUMENT
    """At most this many passages of one document (0: no cap; a ``document`` search has none)."""

    def validated(self) -> SearchRequest:
        query = " ".join(self.query.split())
        if not query:
            raise InvalidQuery("the query is empty: say what to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidQuery(f"the query is {len(query)} characters; at most {MAX_QUERY_CHARS}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidQuery(f"the limit must be between 1 and {MAX_LIMIT}, not {self.limit}")
        if not 0 <= self.per_document <= MAX_LIMIT:
            raise InvalidQuery(
                f"per_document must be between 0 (no cap) and {MAX_LIMIT}, not {self.per_document}"
            )
        document = self.document.strip().lower() if self.document else None
        if document is not None and not re.fullmatch(r"[0-9a-f]{64}", document):
            raise InvalidQuery(f"document must be a document's hash (64 hex digits): {document!r}")
        return SearchRequest(
            query,
            Level(self.level),
            Mode(self.mode),
            self.limit,
            self.source,
            self.path,
            self.file_type.lower().lstrip(".") if self.file_type else None,
            self.tag,
            document,
            0 if document else self.per_document,
        )
