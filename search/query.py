"""Searching the index: chunks ("where exactly do the rules talk about grappling?") or
documents ("which of my books are about naval combat?"), by keyword (BM25), by meaning
(cosine over all-MiniLM-L6-v2 vectors) or both (hybrid: every candidate of the two rankings
scored by a weighted sum of both measures). Tables are read with pylance (see
:mod:`bucketdigest.search.index`).

Filters on file type and tag run inside the index (prefiltering); filters on source and path
are narrowed inside the index and checked exactly here, with enough rows fetched to fill the
page. Each hit carries what a person needs to find the place: the paths the document was
ingested from, the page, the heading path, and a snippet with the query's words marked.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from bucketdigest.search.cache import IndexCache, IndexCacheSettings, open_cache
from bucketdigest.search.filters import accepts, narrowing
from bucketdigest.search.hit import Hit
from bucketdigest.search.index import REBUILD_HINT, TERMS
from bucketdigest.search.request import MAX_LIMIT, Level, Mode, SearchRequest
from bucketdigest.search.snippet import coverage, make_snippet
from bucketdigest.search.tables import open_tables, sql_quoted
from bucketdigest.search.terms import index_terms
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.embedding import Embedder, known_word, query_embedder
from bucketdigest.shared.errors import IndexDamaged, InvalidQuery

OVERFETCH = 10
NPROBES = 20


_MISSING_FILE = ("Not found", "No such file")
"""How Lance says a file its manifest names is not there."""
KNOWN_WORD_CHARS = 4
"""Shorter words the model knows (the, and, of) say nothing about whether a query does."""
SIMILARITY_FLOOR = 0.25
"""A semantic hit's cosine similarity must reach this to be a hit at all (all-MiniLM-L6-v2:
unrelated passages score about 0 to 0.15): without it every search returns its limit, OCR noise
included. A keyword hit must match the query's words."""

KEYWORD_WEIGHT = 0.6
"""Hybrid: a hit's score is ``KEYWORD_WEIGHT * words + (1 - KEYWORD_WEIGHT) * cosine``, both
computed for every candidate of either ranking (a keyword hit's similarity from its vector; a
semantic hit without the query's words scores 0 for them). ``words`` is its BM25 over the
best one, times the square of the share of the query's words it holds: a passage holding the
whole pasted sentence leads as keyword search leads, while one that shares a single common
word with a question asked in other words does not outweigh the passage that means it. Measured
on known-item queries over the real-world corpus and on paraphrases
(scripts/bench/ranking.py, searching_results.py)."""
QUERY_VECTORS_KEPT = 256
HYBRID_CANDIDATES = 3
"""Hybrid: each ranking offers this many times the hits asked for."""

_OFFSET = "_rowoffset"
"""A row's place in its table: a search ranks offsets and reads the columns of the hits it
shows only (reading every candidate's text cost half a hybrid search's time)."""
_COLUMNS = ("digest", "title", "names", "sources", "file_type", "tags", "text")
_CHUNK_COLUMNS = (*_COLUMNS, "id", "page", "headings")
_DOCUMENT_COLUMNS = (*_COLUMNS, "summary")


def _full_text(query: str) -> Any:
    """A quoted query is a phrase; anything else matches any of its words (BM25). Either is
    spelled as the index spells text (CJK as character pairs)."""
    from lance.query import MatchQuery, PhraseQuery

    stripped = query.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == '"' and '"' not in stripped[1:-1]:
        return PhraseQuery(" ".join(index_terms(stripped[1:-1]).split()), TERMS)
    return MatchQuery(index_terms(query.replace('"', " ")), TERMS)


class Searcher:
    """Answers search requests on one index; the embedding model loads on first use."""

    def __init__(self, chunks: Any, documents: Any, embedder: Embedder | None = None) -> None:
        self.chunks = chunks
        self.documents = documents
        self._embedder = embedder
        self._vectors: dict[str, Any] = {}
        self._vectors_lock = threading.Lock()
        """A server's threads share the searcher: two evicting the same oldest vector at
        once was a KeyError, a 500 under load."""

    @classmethod
    def open(cls, settings: StoreSettings, cache: IndexCache | None = None) -> Searcher:
        """The searcher of the index of the bucket ``settings`` names (read from ``cache``'s
        local copy when there is one)."""
        return cls(*open_tables(settings, cache))

    def reads_the_same_index_as(self, other: Searcher) -> bool:
        """Whether ``other`` reads the same versions of the same tables (a server keeps its
        searcher then: a new one starts with cold caches, and its first searches are slow)."""
        mine, theirs = (self.chunks, self.documents), (other.chunks, other.documents)
        return all(
            (a.uri, a.version) == (b.uri, b.version) for a, b in zip(mine, theirs, strict=True)
        )

    def _vector(self, query: str) -> Any:
        """The query's embedding; the last few are kept (hybrid asks twice, a web page asks
        for chunks and documents, people repeat themselves)."""
        with self._vectors_lock:
            vector = self._vectors.get(query)
        if vector is None:
            vector = (self._embedder or query_embedder()).encode([query])[0]
            with self._vectors_lock:
                self._vectors[query] = vector
                while len(self._vectors) > QUERY_VECTORS_KEPT:
                    self._vectors.pop(next(iter(self._vectors)))
        return vector

    def _keyword(
        self, table: Any, request: SearchRequest, fetch: int, columns: tuple[str, ...] = ()
    ) -> list[dict[str, Any]]:
        return table.to_table(
            columns=[_OFFSET, "_score", *columns],
            full_text_query=_full_text(request.query),
            filter=narrowing(request),
            prefilter=True,
            limit=fetch,
        ).to_pylist()

    def _understood(self, table: Any, request: SearchRequest) -> bool:
        """Whether the query says something the model or the index knows: a word of
        :data:`KNOWN_WORD_CHARS` letters or more the model has whole in its vocabulary, or any
        word the index holds. Gibberish (``asdfghjkl``) still comes out of the model as a
        vector, and every vector has neighbours; without this test it would find them."""
        words = re.findall(r"\w+", request.query)
        if any(len(word) >= KNOWN_WORD_CHARS and known_word(word) for word in words):
            return True
        return bool(self._keyword(table, request, 1))

    def _semantic(self, table: Any, request: SearchRequest, fetch: int) -> list[dict[str, Any]]:
        if not self._understood(table, request):
            return []
        nearest = {
            "column": "vector",
            "q": self._vector(request.query),
            "k": fetch,
            "metric": "cosine",
            "nprobes": NPROBES,
        }
        rows = table.to_table(
            columns=[_OFFSET, "_distance"],
            nearest=nearest,
            filter=narrowing(request),
            prefilter=True,
        ).to_pylist()
        return [row for row in rows if 1.0 - float(row["_distance"]) >= SIMILARITY_FLOOR]

    def _ranked(self, table: Any, request: SearchRequest, fetch: int) -> list[tuple[int, float]]:
        """The rows (their offsets in ``table``) with their scores, best first."""
        if request.mode is Mode.KEYWORD:
            return [(r[_OFFSET], r["_score"]) for r in self._keyword(table, request, fetch)]
        if request.mode is Mode.SEMANTIC:
            rows = self._semantic(table, request, fetch)
            return [(r[_OFFSET], 1.0 - r["_distance"]) for r in rows]
        return self._fused(table, request, fetch)

    def _fused(self, table: Any, request: SearchRequest, fetch: int) -> list[tuple[int, float]]:
        """Both rankings' candidates, scored by both measures (see :data:`KEYWORD_WEIGHT`)."""
        import numpy as np

        vector = self._vector(request.query)
        keyword = self._keyword(table, request, fetch, ("text", "vector"))
        best = max((r["_score"] for r in keyword), default=0.0) or 1.0
        scored: dict[int, float] = {}
        for row in keyword:
            similarity = float(np.dot(np.asarray(row["vector"], dtype=np.float32), vector))
            words = row["_score"] / best * coverage(request.query, row["text"]) ** 2
            scored[row[_OFFSET]] = KEYWORD_WEIGHT * words + (1 - KEYWORD_WEIGHT) * similarity
        for row in self._semantic(table, request, fetch):
            if row[_OFFSET] not in scored:
                similarity = 1.0 - float(row["_distance"])
                scored[row[_OFFSET]] = (1 - KEYWORD_WEIGHT) * similarity
        return sorted(scored.items(), key=lambda pair: pair[1], reverse=True)

    def search(self, request: SearchRequest) -> list[Hit]:
        """The best hits, best first. Raises InvalidQuery for a request it cannot answer."""
        request = request.validated()
        chunks = request.level is Level.CHUNKS
        table = self.chunks if chunks else self.documents
        if table.count_rows() == 0:
            return []

        # rank: more candidates than shown when rows are checked exactly afterwards
        exact = bool(request.source or request.path)
        fetch = min(MAX_LIMIT, request.limit * OVERFETCH) if exact else request.limit
        if request.mode is Mode.HYBRID:
            fetch = min(MAX_LIMIT, max(fetch, HYBRID_CANDIDATES * request.limit))
        try:
            ranked = self._ranked(table, request, fetch)
        except (ValueError, OSError) as exc:
            if any(sign in str(exc) for sign in _MISSING_FILE):
                raise IndexDamaged(
                    f"the index lacks one of its files ({str(exc).splitlines()[0][:200]}): "
                    f"searches fail until the next indexing rebuilds it; {REBUILD_HINT} now"
                ) from exc
            raise InvalidQuery(f"the index cannot answer {request.query!r}: {exc}") from exc

        # the hits, read from the rows ranked
        shown = ranked if exact else ranked[: request.limit]
        columns = list(_CHUNK_COLUMNS if chunks else _DOCUMENT_COLUMNS)
        rows = table.take([offset for offset, _ in shown], columns=columns).to_pylist()
        hits = []
        for (_, score), row in zip(shown, rows, strict=True):
            if exact and not accepts(row, request):
                continue
            text = row["text"] if chunks else self._passage(row, request)
            hits.append(
                Hit(
                    digest=row["digest"],
                    score=float(score),
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

    def _passage(self, row: dict[str, Any], request: SearchRequest) -> str:
        """A document hit's best passage: its chunk that matches the query best (its summary
        when none holds the query's words)."""
        try:
            best = self.chunks.to_table(
                columns=["text"],
                full_text_query=_full_text(request.query),
                filter=f"digest = {sql_quoted(row['digest'])}",
                prefilter=True,
                limit=1,
            ).to_pylist()
        except ValueError:
            best = []
        return best[0]["text"] if best else (row["summary"] or row["text"])


def search(
    settings: StoreSettings,
    request: SearchRequest,
    cache: IndexCacheSettings = IndexCacheSettings(),  # noqa: B008 - frozen, shared safely
) -> list[Hit]:
    """Open the index of the store named by ``settings`` and answer ``request``."""
    return Searcher.open(settings, open_cache(settings, cache)).search(request)
