"""Searching the index: chunks ("where exactly do the rules talk about grappling?") or
documents ("which of my books are about naval combat?"), by keyword (BM25), by meaning
(cosine over all-MiniLM-L6-v2 vectors) or both (hybrid: reciprocal-rank fusion of the two).

Filters on file type and tag run inside the index (prefiltering); filters on source and path
are narrowed inside the index and checked exactly here, with enough rows fetched to fill the
page. Each hit carries what a person needs to find the place: the paths the document was
ingested from, the page, the heading path, and a snippet with the query's words marked.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bucketdigest.search.index import SearchIndex
from bucketdigest.search.location import index_location
from bucketdigest.search.snippet import Snippet, make_snippet
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.embedding import Embedder, shared_embedder
from bucketdigest.shared.errors import InvalidQuery

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 1000
OVERFETCH = 10
NPROBES = 20


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

    def validated(self) -> SearchRequest:
        query = " ".join(self.query.split())
        if not query:
            raise InvalidQuery("the query is empty: say what to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidQuery(f"the query is {len(query)} characters; at most {MAX_QUERY_CHARS}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidQuery(f"the limit must be between 1 and {MAX_LIMIT}, not {self.limit}")
        return SearchRequest(
            query,
            Level(self.level),
            Mode(self.mode),
            self.limit,
            self.source,
            self.path,
            self.file_type.lower().lstrip(".") if self.file_type else None,
            self.tag,
        )


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


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _literal(glob: str) -> str:
    """The longest run of a glob without wildcards, to narrow a LIKE before the exact match."""
    parts = re.split(r"[*?\[\]]+", glob)
    return max(parts, key=len)


def _where(request: SearchRequest) -> str | None:
    clauses = []
    if request.file_type:
        clauses.append(f"file_type = {_quoted(request.file_type)}")
    if request.tag:
        clauses.append(f"array_has(tags, {_quoted(request.tag)})")
    for text in (request.source, request.path and _literal(request.path)):
        if text:
            clauses.append(f"locations LIKE {_quoted('%' + text + '%')}")
    return " AND ".join(clauses) or None


def _accepts(row: dict[str, Any], request: SearchRequest) -> bool:
    if request.source and not any(request.source in s for s in row["sources"] or ()):
        return False
    if request.path:
        return any(fnmatch.fnmatchcase(name, request.path) for name in row["names"] or ())
    return True


def _score(row: dict[str, Any], mode: Mode) -> float:
    if mode is Mode.HYBRID:
        return float(row["_relevance_score"])
    if mode is Mode.KEYWORD:
        return float(row["_score"])
    return 1.0 - float(row["_distance"])


class Searcher:
    """Answers search requests on one index; the embedding model loads on first use."""

    def __init__(self, index: SearchIndex, embedder: Embedder | None = None) -> None:
        self.index = index
        self._embedder = embedder

    @classmethod
    def open(cls, settings: StoreSettings) -> Searcher:
        return cls(SearchIndex.open(index_location(settings)))

    def _vector(self, query: str) -> Any:
        embedder = self._embedder or shared_embedder()
        return embedder.encode([query])[0]

    def _query(self, table: Any, request: SearchRequest, fetch: int) -> list[dict[str, Any]]:
        if request.mode is Mode.KEYWORD:
            builder = table.search(request.query, query_type="fts", fts_columns="text")
        elif request.mode is Mode.SEMANTIC:
            builder = (
                table.search(self._vector(request.query), vector_column_name="vector")
                .distance_type("cosine")
                .nprobes(NPROBES)
            )
        else:
            builder = (
                table.search(query_type="hybrid", vector_column_name="vector", fts_columns="text")
                .vector(self._vector(request.query))
                .text(request.query)
                .distance_type("cosine")
                .nprobes(NPROBES)
            )
        where = _where(request)
        if where:
            builder = builder.where(where, prefilter=True)
        return builder.limit(fetch).to_list()

    def search(self, request: SearchRequest) -> list[Hit]:
        """The best hits, best first. Raises InvalidQuery for a request it cannot answer."""
        request = request.validated()
        chunks = request.level is Level.CHUNKS
        table = self.index.chunks if chunks else self.index.documents
        if table.count_rows() == 0:
            return []
        exact = bool(request.source or request.path)
        fetch = min(MAX_LIMIT, request.limit * OVERFETCH) if exact else request.limit
        try:
            rows = self._query(table, request, fetch)
        except ValueError as exc:
            raise InvalidQuery(f"the index cannot answer {request.query!r}: {exc}") from exc
        hits = []
        for row in rows:
            if exact and not _accepts(row, request):
                continue
            text = row["text"] if chunks else (row["summary"] or row["text"])
            hits.append(
                Hit(
                    digest=row["digest"],
                    score=_score(row, request.mode),
                    title=row["title"],
                    names=tuple(row["names"] or ()),
                    sources=tuple(row["sources"] or ()),
                    file_type=row["file_type"],
                    tags=tuple(row["tags"] or ()),
                    snippet=make_snippet(text, request.query),
                    page=row["page"] if chunks else None,
                    headings=tuple(row["headings"] or ()) if chunks else (),
                    chunk_id=row["id"] if chunks else None,
                )
            )
            if len(hits) == request.limit:
                break
        return hits


def search(settings: StoreSettings, request: SearchRequest) -> list[Hit]:
    """Open the index of the store named by ``settings`` and answer ``request``."""
    return Searcher.open(settings).search(request)
