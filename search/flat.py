"""A small table's vectors held in memory, so that ranking by meaning does not ask Lance; and,
where they are small enough, the columns a hit shows, so that showing it does not either.

Below :data:`~bucketdigest.search.index.VECTOR_INDEX_FROM` rows a table has no vector index and
Lance compares the query with every vector anyway: on the real-world corpus's 1,216 passages
that took 6-7 ms a query, nearly all of it the query's planning and execution around the
arithmetic, which numpy does in 0.1 ms. A searcher reads one version of the index, so the
vectors it reads once stay right for as long as it searches; past that many rows the index
answers (its vectors would take 1.5 KiB a row of the server's memory, and its vector index
answers in a few milliseconds). Reading ten hits' columns by offset cost 3-4 ms of such a
search across the table's fragments, and its keyword query as long again to read its
candidates' text along with their offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

OFFSET = "_rowoffset"
"""A row's place in its table, as Lance names it: a search ranks offsets and reads the columns
of the hits it shows only (reading every candidate's text cost half a hybrid search's time)."""


@dataclass(frozen=True)
class FlatVectors:
    """Every readable row's vector (unit length), its offset, and some of its columns."""

    offsets: np.ndarray
    vectors: np.ndarray
    columns: dict[str, list[Any]]
    places: dict[int, int]
    """Offset → its row's place in :attr:`vectors`."""

    word_vectors: np.ndarray | None = None
    """Every row's word vector (unit length), where the table has them."""

    @classmethod
    def of(
        cls, table: Any, column: str, kept: Sequence[str], words: str | None = None
    ) -> FlatVectors:
        """From an Arrow table read with :data:`OFFSET`, ``column`` (the vectors: fixed-size
        lists; a missing one counts as nothing in common with any query), ``kept`` and
        ``words`` (the word vectors' column, where there is one)."""
        offsets = table.column(OFFSET).to_numpy().astype(np.int64)
        return cls(
            offsets=offsets,
            vectors=unit_rows(table, column),
            columns={name: table.column(name).to_pylist() for name in kept},
            places={int(offset): place for place, offset in enumerate(offsets)},
            word_vectors=None if words is None else unit_rows(table, words),
        )

    def holds(self, columns: Sequence[str]) -> bool:
        return all(name in self.columns for name in columns)

    def nearest(self, query: Any, k: int, columns: Sequence[str]) -> list[dict[str, Any]]:
        """The ``k`` rows closest to ``query`` in cosine, closest first, as Lance gives them:
        :data:`OFFSET`, ``_distance`` (1 - cosine) and ``columns`` (which :meth:`holds`)."""
        asked = np.asarray(query, dtype=np.float32)
        asked = asked / (float(np.linalg.norm(asked)) or 1.0)
        # einsum, not ``@``: OpenBLAS splits a product this size across the cores, and its
        # threads then spin for a while after it, taking the core a server's other searches
        # need (20 threads searching: 70 ms of CPU a search against 35)
        similarity = np.einsum("ij,j->i", self.vectors, asked)
        if k <= 0 or not len(similarity):
            return []
        # rows as close as the k-th closest, by closeness then offset: of equal rows (the
        # same text in two documents) the same are shown whatever the order they were read
        kth = np.partition(similarity, len(similarity) - k)[-k] if k < len(similarity) else -2.0
        close = np.flatnonzero(similarity >= kth)
        top = close[np.lexsort((self.offsets[close], -similarity[close]))][:k]
        return [
            {
                OFFSET: int(self.offsets[place]),
                "_distance": 1.0 - float(similarity[place]),
                **{name: self.columns[name][place] for name in columns},
            }
            for place in top
        ]

    def rows(self, offsets: Sequence[int], columns: Sequence[str]) -> list[dict[str, Any]] | None:
        """The rows at ``offsets``: their ``columns``, as Lance's ``take`` gives them (None:
        a column not held, or an offset not a row read)."""
        if not self.holds(columns):
            return None
        try:
            places = [self.places[int(offset)] for offset in offsets]
        except KeyError:
            return None
        return [{name: self.columns[name][place] for name in columns} for place in places]

    def vector(self, offset: int) -> np.ndarray | None:
        """The unit vector of the row at ``offset`` (None: not a row read)."""
        place = self.places.get(int(offset))
        return None if place is None else self.vectors[place]

    def word_vector(self, offset: int) -> np.ndarray | None:
        """The word vector of the row at ``offset`` (None: not a row read, or none held)."""
        place = self.places.get(int(offset))
        return None if place is None or self.word_vectors is None else self.word_vectors[place]


def unit_rows(table: Any, column: str) -> np.ndarray:
    """``table``'s ``column`` of fixed-size lists as a matrix of unit rows (a missing or zero
    vector: zeros, nothing in common with any query)."""
    dimensions = table.schema.field(column).type.list_size
    lists = table.column(column).combine_chunks()
    if lists.null_count:
        lists = lists.fill_null(pa.scalar([0.0] * dimensions, type=lists.type))
    values = lists.flatten().to_numpy(zero_copy_only=False)
    vectors = np.nan_to_num(values.astype(np.float32)).reshape(table.num_rows, dimensions)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
