"""What a searcher holds in memory of a small index's tables: their rows (vectors, and the
columns hits show, :mod:`.flat`) and their words (:mod:`.held_words`), read once, so that
ranking and showing hits do not ask Lance. A searcher reads one version of the index, so what
it holds stays right for as long as it searches.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from typing import Any

from bucketdigest.search.flat import OFFSET, FlatVectors
from bucketdigest.search.held_words import HeldWords, as_indexed
from bucketdigest.search.index import FULL_TEXT_INDEX, TERMS, VECTOR_INDEX_FROM, WORD_VECTOR
from bucketdigest.search.lost_parts import LostIndexPart, LostRows

log = logging.getLogger(__name__)

HELD_COLUMNS_BYTES = 64 * 2**20
"""A table small enough for its vectors to be held in memory (:mod:`.flat`) also has the
columns its hits show and its keyword candidates are scored by held there when they take no
more than this (the real-world corpus's 1,216 passages: 4 MiB; 20,000 passages of 1,500
characters, about 60 MiB)."""


class HeldTables:
    """The rows and words held of each table a searcher asked for, read on first use."""

    def __init__(
        self,
        columns: Sequence[str],
        always: Sequence[str],
        read: Callable[[Any, dict[str, Any]], Any],
        lost: Callable[[Any], LostRows | None],
    ) -> None:
        """``columns``: those held where a table has them and they fit in
        :data:`HELD_COLUMNS_BYTES`; ``always`` (of them) whatever their size. ``read(table,
        query)`` reads an Arrow table leaving lost fragments out; ``lost(table)`` says what a
        query found lost of it."""
        self._columns = tuple(columns)
        self._always = tuple(always)
        self._read = read
        self._lost = lost
        self._rows: dict[str, FlatVectors | None] = {}
        """Table → its rows in memory, once read (None: too many rows, or unreadable)."""
        self._words: dict[str, Future[HeldWords | None]] = {}
        """Table → its keyword ranking in memory, built or being built (None: its terms are
        not held, or its full-text index does not count exactly the rows held)."""
        self._lock = threading.Lock()

    def rows(self, table: Any) -> FlatVectors | None:
        """``table``'s rows held in memory, read on first use; None where it has too many,
        or cannot be read whole."""
        with self._lock:
            if table.uri not in self._rows:
                self._rows[table.uri] = self._read_rows(table)
            return self._rows[table.uri]

    def _read_rows(self, table: Any) -> FlatVectors | None:
        if table.count_rows() >= VECTOR_INDEX_FROM:
            return None
        kept = [name for name in self._columns if name in table.schema.names]
        words = WORD_VECTOR if WORD_VECTOR in table.schema.names else None
        vectors = ["vector", *([words] if words else [])]
        try:
            read = self._read(table, {"columns": [OFFSET, *vectors, *kept]})
        except LostIndexPart:
            return None
        if sum(read.column(name).nbytes for name in kept) > HELD_COLUMNS_BYTES:
            kept = [name for name in self._always if name in kept]
        return FlatVectors.of(read, "vector", kept, words)

    def words(self, table: Any) -> HeldWords | None:
        """``table``'s keyword ranking in memory, once built: the first ask starts building
        it on a thread of its own (0.4 s a thousand passages, mostly Lance's tokenizer), and
        the index ranks until it is done (a one-off search does not wait for it)."""
        building = self._building(table)
        return building.result() if building.done() else None

    def hold(self, tables: Sequence[Any], timeout: float | None = None) -> bool:
        """Reads ``tables``' rows and words now, waiting up to ``timeout`` seconds for the
        words; whether every table's words are held then."""
        building = [self._building(table) for table in tables]
        wait(building, timeout)
        return all(b.done() and b.result() is not None for b in building)

    def _building(self, table: Any) -> Future[HeldWords | None]:
        with self._lock:
            building = self._words.get(table.uri)
            if building is None:
                building = self._words[table.uri] = Future()
                threading.Thread(target=self._build, args=(table, building), daemon=True).start()
        return building

    def _build(self, table: Any, building: Future[HeldWords | None]) -> None:
        try:
            building.set_result(self._read_words(table))
        except Exception as exc:  # the index ranks: it says what is wrong when asked
            log.warning("keywords of %s not held in memory: %s", table.uri, exc)
            building.set_result(None)

    def _read_words(self, table: Any) -> HeldWords | None:
        """The words of the terms held of ``table``, when its full-text index scores exactly
        those rows (:func:`.held_words.as_indexed`), none left out as lost."""
        flat = self.rows(table)
        if flat is None or not flat.holds((TERMS,)):
            return None
        lost = self._lost(table)
        if lost is not None and lost.rows:
            return None
        return as_indexed(table, FULL_TEXT_INDEX, flat.columns[TERMS], flat.offsets)
