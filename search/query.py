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

import logging
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache, partial
from typing import Any, TypeVar

from bucketdigest.search.cache import IndexCache, IndexCacheSettings, open_cache
from bucketdigest.search.filters import accepts, narrowing
from bucketdigest.search.flat import OFFSET as _OFFSET
from bucketdigest.search.flat import FlatVectors
from bucketdigest.search.fusion import SIMILARITY_FLOOR, best_first, fused
from bucketdigest.search.held import HeldTables
from bucketdigest.search.hit import Hit, merged_hits
from bucketdigest.search.index import TERMS, WORD_VECTOR
from bucketdigest.search.lost_parts import (
    LostIndexPart,
    LostRows,
    failed_read,
    lost_rows,
    nearest_rows,
    read_rows,
    read_table,
)
from bucketdigest.search.picking import Pick, picked
from bucketdigest.search.request import MAX_LIMIT, Level, Mode, SearchRequest
from bucketdigest.search.snippet import make_snippet
from bucketdigest.search.stand_in import OnceMade, StandIn
from bucketdigest.search.tables import open_tables, sql_quoted
from bucketdigest.search.terms import any_words, full_text_query, phrase
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.embedding import Embedder, known_word, query_embedder
from bucketdigest.shared.errors import IndexDamaged
from bucketdigest.shared.naming import display_name
from bucketdigest.shared.store import Store
from bucketdigest.shared.word_embedding import word_embedder

log = logging.getLogger(__name__)

_Read = TypeVar("_Read")

OVERFETCH = 10
NPROBES = 20


KNOWN_WORD_CHARS = 4
"""Shorter words the model knows (the, and, of) say nothing about whether a query does."""
QUERY_VECTORS_KEPT = 256
DOCUMENT_VECTORS_KEPT = 20_000
"""Documents' mean vectors a searcher keeps in memory (1.5 KiB each), and as many documents'
fields: a hybrid search asks for its candidates' documents, and reading them from the index
was a third of its queries."""
HYBRID_CANDIDATES = 3
"""Hybrid: each ranking offers this many times the hits asked for."""
_COLUMNS = ("digest", "names", "sources", "file_type", "tags", "text")
_CHUNK_COLUMNS = (*_COLUMNS, "id", "page", "headings")
_DOCUMENT_FIELDS = ("names", "sources", "file_type", "tags")
"""A hit's columns that are its document's: the same in each of its passages' rows and in
its row of the documents table."""
_PASSAGE_COLUMNS = tuple(c for c in _CHUNK_COLUMNS if c not in _DOCUMENT_FIELDS)
_DOCUMENT_COLUMNS = (*_COLUMNS, "summary")
_PICKING = ("digest", "fingerprint")
"""Columns of every chunk candidate that decide which are shown (:func:`.picking.picked`)."""
_HELD = tuple(dict.fromkeys((*_PICKING, TERMS, *_CHUNK_COLUMNS, *_DOCUMENT_COLUMNS)))
"""The columns a small table holds in memory (:mod:`.held`), those it has."""


def _says_a_known_word(query: str) -> bool:
    """Whether ``query`` has a word of :data:`KNOWN_WORD_CHARS` letters or more that the
    model has whole in its vocabulary: then its meaning is asked whatever the words find."""
    words = re.findall(r"\w+", query)
    return any(len(word) >= KNOWN_WORD_CHARS and known_word(word) for word in words)


@cache
def _keyword_queries() -> ThreadPoolExecutor:
    """The threads that ask a hybrid search's keyword query while its caller embeds the
    query and asks for its neighbours. Shared by every searcher of the process; as many as a
    server's threads answering at once (anyio's default, 40), so none waits for another."""
    return ThreadPoolExecutor(40, thread_name_prefix="keyword-query")


class Searcher:
    """Answers search requests on one index; the embedding model loads on first use."""

    def __init__(
        self,
        chunks: Any,
        documents: Any,
        embedder: Embedder | None = None,
        results: Callable[[], Store] | None = None,
    ) -> None:
        self.chunks = chunks
        self.documents = documents
        self._embedder = embedder
        self._stand_in: OnceMade[Searcher] = OnceMade(results)
        """Passages whose index files are lost, read from their results (:mod:`.stand_in`);
        without ``results`` such documents are found as documents alone."""
        self._vectors: dict[str, Any] = {}
        self._vectors_lock = threading.Lock()
        """A server's threads share the searcher: two evicting the same oldest vector at
        once was a KeyError, a 500 under load."""
        self._document_vectors: dict[str, Any] = {}
        """Digest → its document's mean vector (see :data:`DOCUMENT_VECTORS_KEPT`), under
        ``_vectors_lock``: the searcher reads one version of the index, so they hold."""
        self._document_fields: dict[str, dict[str, Any]] = {}
        """Digest → its document's :data:`_DOCUMENT_FIELDS`, kept and held as the vectors
        are: a passage's hit then reads only its own columns (at a million passages the
        document's four were half of what reading the hits cost)."""
        self._held_tables = HeldTables(
            _HELD, _PICKING, partial(self._read, read_table), self._lost_of
        )
        self._lost: dict[str, LostRows] = {}
        """Table → its fragments whose files are lost, once a query found one."""
        self._unanswered: set[str] = set()
        """The rankings an index that lost its files could not give."""
        self._lost_lock = threading.Lock()

    @property
    def damage(self) -> str | None:
        """What searches leave out because files of the index are lost (None: nothing
        found lost), until the indexer's next run rebuilds it."""
        with self._lost_lock:
            rows = sum(lost.rows for lost in self._lost.values())
            unanswered = sorted(self._unanswered)
        return self._stand_in.said(rows, unanswered)

    def _rows(self, table: Any, **query: Any) -> list[dict[str, Any]]:
        """``table.to_table(**query)``'s rows (see :meth:`_read`)."""
        return self._read(read_rows, table, query)

    def _read(self, read: Callable[..., _Read], table: Any, query: dict[str, Any]) -> _Read:
        """``read(table, lost, **query)``. Once a query finds a file of ``table`` lost, the
        fragments it lost are found (once) and their rows left out of this query and the
        next; LostIndexPart when the query still needs a lost file (an index's)."""
        lost = self._lost_of(table)
        try:
            return read(table, lost, **query)
        except LostIndexPart:
            if lost is not None:
                raise
        lost = lost_rows(table)
        with self._lost_lock:
            self._lost[table.uri] = lost
        return read(table, lost, **query)

    def _unanswerable(self, ranking: str, table: Any, exc: LostIndexPart) -> None:
        name = f"{ranking} ({'passages' if table is self.chunks else 'documents'})"
        log.error("the %s ranking cannot be read: %s", name, exc)
        with self._lost_lock:
            self._unanswered.add(name)

    @classmethod
    def open(cls, settings: StoreSettings, cache: IndexCache | None = None) -> Searcher:
        """The searcher of the index of the bucket ``settings`` names (read from ``cache``'s
        local copy when there is one)."""
        tables = open_tables(settings, cache)
        return cls(*tables, results=partial(open_store, settings, self_test=False))

    def reads_the_same_index_as(self, other: Searcher) -> bool:
        """Whether ``other`` reads the same versions of the same tables (a server keeps its
        searcher then: a new one starts with cold caches, and its first searches are slow)."""
        mine, theirs = (self.chunks, self.documents), (other.chunks, other.documents)
        return all(
            (a.uri, a.version) == (b.uri, b.version) for a, b in zip(mine, theirs, strict=True)
        )

    def _flat_vectors(self, table: Any, request: SearchRequest) -> FlatVectors | None:
        """``table``'s vectors in memory (:mod:`.flat`) for a request the index does not narrow,
        read on first use; None where the index ranks (too many rows, a filter, lost files)."""
        if narrowing(request) is not None:
            return None
        return self._held_tables.rows(table)

    def hold(self, timeout: float | None = None) -> bool:
        """Reads now what this searcher holds in memory of a small index (:mod:`.held`),
        waiting up to ``timeout`` s for the words; whether both tables' words are held then."""
        return self._held_tables.hold((self.chunks, self.documents), timeout)

    def _lost_of(self, table: Any) -> LostRows | None:
        with self._lost_lock:
            return self._lost.get(table.uri)

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
        """The rows holding the query's words, best first by BM25 (``_score``), with
        ``columns``: ranked in memory where the table's words are held there, unless the
        request asks for a phrase or a filter narrows it (the index's to answer)."""
        words = None
        if narrowing(request) is None and phrase(request.query) is None:
            words = self._held_tables.words(table)
        flat = self._held_tables.rows(table) if words is not None else None
        if words is not None and flat is not None:
            ranked = words.ranked(any_words(request.query), fetch)
            shown = flat.rows([offset for offset, _ in ranked], columns)
            if shown is not None:
                return [
                    {_OFFSET: offset, "_score": score, **row}
                    for (offset, score), row in zip(ranked, shown, strict=True)
                ]
        return self._rows(
            table,
            columns=[_OFFSET, "_score", *columns],
            full_text_query=full_text_query(request.query),
            filter=narrowing(request),
            prefilter=True,
            limit=fetch,
        )

    def _understood(self, table: Any, request: SearchRequest, held: bool | None) -> bool:
        """Whether the query says something the model or the index knows: a word of
        :data:`KNOWN_WORD_CHARS` letters or more the model has whole in its vocabulary, or any
        word the index holds (``held``: whether the keyword query found rows, when it ran).
        Gibberish (``asdfghjkl``) still comes out of the model as a vector, and every vector
        has neighbours; without this test it would find them."""
        if _says_a_known_word(request.query):
            return True
        if held is not None:
            return held
        try:
            return bool(self._keyword(table, request, 1))
        except LostIndexPart:  # the words cannot be looked up: let the model try
            return True

    def _semantic(
        self,
        table: Any,
        request: SearchRequest,
        fetch: int,
        columns: tuple[str, ...] = (),
        held: bool | None = None,
    ) -> list[dict[str, Any]]:
        if not self._understood(table, request, held):
            return []
        flat = self._flat_vectors(table, request)
        if flat is not None and flat.holds(columns):
            rows = flat.nearest(self._vector(request.query), fetch, columns)
            return [row for row in rows if 1.0 - row["_distance"] >= SIMILARITY_FLOOR]
        nearest = {
            "column": "vector",
            "q": self._vector(request.query),
            "k": fetch,
            "metric": "cosine",
            "nprobes": NPROBES,
        }
        query = {
            "columns": [_OFFSET, "_distance", *columns],
            "nearest": nearest,
            "filter": narrowing(request),
            "prefilter": True,
        }
        try:
            rows = self._rows(table, **query)
        except LostIndexPart:  # every vector that can be read compared
            with self._lost_lock:
                lost = self._lost.get(table.uri) or LostRows((), 0)
            rows = nearest_rows(table, lost, query)
        return [row for row in rows if 1.0 - float(row["_distance"]) >= SIMILARITY_FLOOR]

    def _ranked(
        self, table: Any, request: SearchRequest, fetch: int, columns: tuple[str, ...] = ()
    ) -> tuple[list[tuple[int, float]], dict[int, dict[str, Any]]]:
        """The rows (their offsets in ``table``) with their scores, best first; and each
        candidate's ``columns`` (read with the ranking: a second read costs 2 ms a search)."""
        mode = request.mode
        if mode is Mode.KEYWORD:
            try:
                rows = self._keyword(table, request, fetch, columns)
                ranked = best_first((r[_OFFSET], r["_score"]) for r in rows)
                return ranked, {r[_OFFSET]: r for r in rows}
            except LostIndexPart as exc:  # the words cannot be looked up: by meaning
                self._unanswerable("keyword", table, exc)
                mode = Mode.SEMANTIC
        if mode is Mode.SEMANTIC:
            rows = self._semantic(table, request, fetch, columns)
            ranked = best_first((r[_OFFSET], 1.0 - r["_distance"]) for r in rows)
            return ranked, {r[_OFFSET]: r for r in rows}
        return self._fused(table, request, fetch, columns)

    def _fused(
        self, table: Any, request: SearchRequest, fetch: int, columns: tuple[str, ...] = ()
    ) -> tuple[list[tuple[int, float]], dict[int, dict[str, Any]]]:
        """Both rankings' candidates, scored by both measures (see :mod:`.fusion`); a clear
        winner of either ranking stands no lower than :data:`.fusion.CLEAR_WINNER_PLACE`."""
        import numpy as np

        chunks = table is self.chunks
        # the words a row is matched by (a chunk's headings and text: .terms.matched_text)
        read = tuple(dict.fromkeys((*(("digest",) if chunks else ()), *columns)))
        flat = self._flat_vectors(table, request)
        scoring = (TERMS, *read)  # the keyword candidates' columns, from memory where held
        held_columns = flat is not None and flat.holds(scoring)
        vectors = () if flat is not None else ("vector",)
        asked = partial(
            self._keyword, table, request, fetch, () if held_columns else (*scoring, *vectors)
        )
        keyword: list[dict[str, Any]]
        if _says_a_known_word(request.query):
            # the two rankings at once: Lance and the model let go of Python's lock while
            # they work, so a search waits for the slower of them, not for both
            pending = _keyword_queries().submit(asked)
            semantic = self._semantic(table, request, fetch, read, held=True)
            try:
                keyword = pending.result()
            except LostIndexPart as exc:  # by meaning alone
                self._unanswerable("keyword", table, exc)
                keyword = []
        else:  # whether the words are in the index decides whether meaning is asked
            held_words: bool | None
            try:
                keyword = asked()
                held_words = bool(keyword)
            except LostIndexPart as exc:
                self._unanswerable("keyword", table, exc)
                keyword, held_words = [], None
            semantic = self._semantic(table, request, fetch, read, held=held_words)
        if held_columns:
            keyword = self._filled(table, keyword, scoring)
        vector = self._vector(request.query)  # embedded by then when meaning was asked

        def similarity(row: dict[str, Any]) -> float:
            """A keyword candidate's cosine with the query (every row the keyword query can
            give was read into ``flat`` where there is one)."""
            if flat is None:
                return float(np.dot(np.asarray(row["vector"], dtype=np.float32), vector))
            kept = flat.vector(row[_OFFSET])
            return 0.0 if kept is None else float(np.dot(kept, vector))

        def about() -> dict[str, float]:
            if not chunks:
                return {}
            return self._about(vector, {r["digest"] for r in (*keyword, *semantic)})

        known_words: dict[int, Any] | None = None
        asked_words: Any = None

        def word_similarity(row: dict[str, Any]) -> float:
            """A passage's cosine with the query in word vectors (documents have none), the
            candidates' read on the first ask."""
            nonlocal known_words, asked_words
            if not chunks:
                return 0.0
            if known_words is None:
                known_words = self._word_vectors(table, (*keyword, *semantic))
                asked_words = word_embedder().encode([request.query])[0]
            kept = known_words.get(row[_OFFSET])
            return 0.0 if kept is None else float(np.dot(kept, asked_words))

        ranked = fused(request.query, keyword, semantic, similarity, about, word_similarity)
        return ranked, {r[_OFFSET]: r for r in (*semantic, *keyword)}

    def _word_vectors(self, table: Any, rows: Iterable[dict[str, Any]]) -> dict[int, Any]:
        """The word vectors of ``rows`` by offset: from memory where the table is held there
        (a filtered search too), else one read of them all (read along with the rankings'
        candidates, they doubled a filtered search on an S3 index: 187 -> 372 ms at 10,000
        chunks on moto)."""
        import numpy as np

        offsets = sorted({int(row[_OFFSET]) for row in rows})
        held = self._held_tables.rows(table)
        if held is not None and held.word_vectors is not None:
            return {offset: held.word_vector(offset) for offset in offsets}
        taken = table.take(offsets, columns=[WORD_VECTOR]).to_pylist() if offsets else []
        return {
            offset: np.asarray(row[WORD_VECTOR], dtype=np.float32)
            for offset, row in zip(offsets, taken, strict=True)
            if row[WORD_VECTOR] is not None
        }

    def _about(self, vector: Any, digests: set[str]) -> dict[str, float]:
        """How close each document of ``digests`` is, as a whole, to the query's ``vector``
        (cosine with the document's mean vector)."""
        import numpy as np

        with self._vectors_lock:
            known = {d: self._document_vectors[d] for d in digests if d in self._document_vectors}
        wanted = sorted(digests - known.keys())
        if wanted:
            listed = ", ".join(sql_quoted(d) for d in wanted)
            try:
                rows = self._rows(
                    self.documents,
                    columns=["digest", "vector", *_DOCUMENT_FIELDS],
                    filter=f"digest IN ({listed})",
                )
            except LostIndexPart as exc:  # the passages alone
                self._unanswerable("documents'", self.documents, exc)
                return {}
            read = {row["digest"]: np.asarray(row["vector"], dtype=np.float32) for row in rows}
            known |= read
            with self._vectors_lock:
                self._document_vectors |= read
                while len(self._document_vectors) > DOCUMENT_VECTORS_KEPT:
                    self._document_vectors.pop(next(iter(self._document_vectors)))
            self._keep_document_fields(rows)
        return {digest: float(np.dot(kept, vector)) for digest, kept in known.items()}

    def search(self, request: SearchRequest) -> list[Hit]:
        """The best hits, best first. Raises InvalidQuery for a request it cannot answer.

        While passages' index files are lost, their documents' passages are searched in a
        stand-in read from their results (:mod:`.stand_in`), their hits ranked among the
        others; documents it does not hold are still found as documents: the documents' own
        hits, by words and meaning whatever the mode asked (title, names, tags, summary; the
        mean of its passages' vectors), follow the passages found, for documents no passage
        found."""
        request = request.validated()
        if request.level is not Level.CHUNKS:
            return self._search(request)
        try:
            hits = self._search(request)
        except IndexDamaged:  # no passage can be read
            hits = []
            with self._lost_lock:
                self._lost.setdefault(self.chunks.uri, LostRows((), self.chunks.count_rows()))
        with self._lost_lock:
            lost = self._lost.get(self.chunks.uri)
        if lost is None or not lost.rows:
            return hits
        stand_in = self._stand_in.searcher(self.chunks, self.documents, lost, self._wrapped)
        if stand_in is not None:
            hits = merged_hits(hits, stand_in.search(request), request.limit)
        if len(hits) >= request.limit or request.document is not None:
            return hits
        found = {hit.digest for hit in hits}
        documents = self._search(replace(request, level=Level.DOCUMENTS, mode=Mode.HYBRID))
        hits += [hit for hit in documents if hit.digest not in found]
        return hits[: request.limit]

    def _wrapped(self, made: StandIn) -> Searcher:
        return Searcher(made.chunks, made.documents, self._embedder)

    def _search(self, request: SearchRequest) -> list[Hit]:
        chunks = request.level is Level.CHUNKS
        table = self.chunks if chunks else self.documents
        if table.count_rows() == 0:
            return []

        # rank: more candidates than shown when rows are checked exactly afterwards, or
        # when passages of one document are capped and the same passage counted once
        exact = bool(request.source or request.path)
        fetch = min(MAX_LIMIT, request.limit * OVERFETCH) if exact else request.limit
        if request.mode is Mode.HYBRID or (chunks and request.per_document):
            fetch = min(MAX_LIMIT, max(fetch, HYBRID_CANDIDATES * request.limit))
        try:
            light = (*_PICKING, *(("names", "sources") if exact else ())) if chunks else ()
            ranked, candidates = self._ranked(table, request, fetch, light)
        except (LostIndexPart, ValueError, OSError) as exc:
            raise failed_read(exc, request.query) from exc
        if chunks:
            picks = picked(ranked, candidates, request, exact)
        else:
            picks = [Pick(offset, score) for offset, score in ranked]

        # the hits, read from the rows picked
        shown = picks if exact else picks[: request.limit]
        if chunks:
            rows = self._shown_rows(table, shown)
        else:
            rows = self._take(table, [pick.offset for pick in shown], _DOCUMENT_COLUMNS)
        hits = []
        for pick, row in zip(shown, rows, strict=True):
            if exact and not chunks and not accepts(row, request):
                continue
            text = row["text"] if chunks else self._passage(row, request)
            hits.append(
                Hit(
                    digest=row["digest"],
                    score=float(pick.score),
                    title=display_name(row["names"] or (), row["digest"]),
                    names=tuple(row["names"] or ()),
                    sources=tuple(row["sources"] or ()),
                    file_type=row["file_type"],
                    tags=tuple(row["tags"] or ()),
                    snippet=make_snippet(text, request.query),
                    page=row["page"] if chunks else None,
                    headings=tuple(row["headings"] or ()) if chunks else (),
                    chunk_id=row["id"] if chunks else None,
                    more=pick.more,
                    repeats=pick.repeats,
                )
            )
            if len(hits) == request.limit:
                break
        return hits

    def _take(
        self, table: Any, offsets: list[int], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """The ``columns`` of the rows at ``offsets``, from memory where the table is held
        there."""
        flat = self._held_tables.rows(table)
        held = flat.rows(offsets, columns) if flat is not None else None
        if held is not None:
            return held
        return table.take(offsets, columns=list(columns)).to_pylist()

    def _filled(
        self, table: Any, rows: list[dict[str, Any]], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """``rows`` (read with their offsets) with their ``columns`` (see :meth:`_take`)."""
        more = self._take(table, [row[_OFFSET] for row in rows], columns)
        return [{**row, **extra} for row, extra in zip(rows, more, strict=True)]

    def _shown_rows(self, table: Any, shown: list[Pick]) -> list[dict[str, Any]]:
        """The passages' rows of ``shown``: their own columns read, their documents' fields
        from memory when every one of them is known there."""
        with self._vectors_lock:
            known = {pick.digest: self._document_fields.get(pick.digest) for pick in shown}
        offsets = [pick.offset for pick in shown]
        if all(known.values()):
            rows = self._take(table, offsets, _PASSAGE_COLUMNS)
            return [{**known[row["digest"]], **row} for row in rows]
        rows = self._take(table, offsets, _CHUNK_COLUMNS)
        self._keep_document_fields(rows)
        return rows

    def _keep_document_fields(self, rows: list[dict[str, Any]]) -> None:
        with self._vectors_lock:
            for row in rows:
                self._document_fields[row["digest"]] = {f: row[f] for f in _DOCUMENT_FIELDS}
            while len(self._document_fields) > DOCUMENT_VECTORS_KEPT:
                self._document_fields.pop(next(iter(self._document_fields)))

    def _passage(self, row: dict[str, Any], request: SearchRequest) -> str:
        """A document hit's best passage: its chunk that matches the query best (its summary
        when none holds the query's words)."""
        try:
            best = self._rows(
                self.chunks,
                columns=["text"],
                full_text_query=full_text_query(request.query),
                filter=f"digest = {sql_quoted(row['digest'])}",
                prefilter=True,
                limit=1,
            )
        except (ValueError, LostIndexPart):
            best = []
        return best[0]["text"] if best else (row["summary"] or row["text"])


def search(
    settings: StoreSettings,
    request: SearchRequest,
    cache: IndexCacheSettings = IndexCacheSettings(),  # noqa: B008 - frozen, shared safely
) -> list[Hit]:
    """Open the index of the store named by ``settings`` and answer ``request``."""
    return Searcher.open(settings, open_cache(settings, cache)).search(request)
