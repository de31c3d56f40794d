"""Reading an index some of whose files are lost (a hand edit, a partial copy, a bucket
rule that expired them), until the indexer's next run rebuilds it beside.

A Lance table is fragments of rows, each in its own data files, and indexes over them. A
query that reaches a lost file fails whole; so a search that hits one finds which fragments
cannot be read (one row of each, read once a searcher) and asks again leaving their rows out
by their row ids (a fragment's rows are ``fragment_id << 32`` on): the other documents are
found as before. A search by meaning that still reads a lost file (Lance's flat search reads
every fragment before it filters, and a lost vector index cannot answer) compares the vectors
of the fragments that can be read itself. A full-text index that lost its files cannot answer
at all; the search then answers by meaning (see :class:`~bucketdigest.search.query.Searcher`),
and says what it left out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from bucketdigest.search.index import REBUILD_HINT
from bucketdigest.shared.errors import (
    BucketdigestError,
    IndexDamaged,
    InvalidQuery,
    SearchIndexError,
)

log = logging.getLogger(__name__)

MISSING_FILE = ("Not found", "No such file")
"""How Lance says a file its manifest names is not there."""


class LostIndexPart(Exception):
    """A query needs a file of the index that is lost, and not a fragment's rows it could
    leave out: an index's own files."""


def is_missing_file(exc: BaseException) -> bool:
    return any(sign in str(exc) for sign in MISSING_FILE)


@dataclass(frozen=True)
class LostRows:
    """The fragments of one table whose files are lost."""

    fragments: tuple[int, ...]
    rows: int
    """How many rows they hold (as the table's manifest counts them)."""

    def excluded(self, query: dict[str, Any]) -> dict[str, Any]:
        """``query`` (``to_table``'s arguments) leaving out these fragments' rows, before
        any ranking (a prefilter: a ranking that reached them would read them)."""
        if not self.fragments:
            return query
        apart = " AND ".join(
            f"(_rowid < {f << 32} OR _rowid >= {(f + 1) << 32})" for f in self.fragments
        )
        given = query.get("filter")
        return {**query, "filter": f"({given}) AND {apart}" if given else apart, "prefilter": True}


def lost_rows(table: Any) -> LostRows:
    """The fragments of ``table`` (a Lance dataset) that cannot be read: one row of each is
    read, all columns."""
    lost: list[int] = []
    rows = 0
    for fragment in table.get_fragments():
        try:
            table.scanner(fragments=[fragment], limit=1).to_table()
        except (ValueError, OSError) as exc:
            if not is_missing_file(exc):
                raise
            lost.append(fragment.fragment_id)
            rows += fragment.count_rows()
    if lost:
        log.error(
            "%s: the files of %d of its fragments (%d rows) are lost; searches leave them out "
            "until the indexer's next run rebuilds the index",
            table.uri,
            len(lost),
            rows,
        )
    return LostRows(tuple(lost), rows)


def read_table(table: Any, lost: LostRows | None, **query: Any) -> Any:
    """``table.to_table(**query)`` (an Arrow table) leaving out ``lost``'s rows;
    LostIndexPart when the query still needs a lost file."""
    try:
        return table.to_table(**(lost.excluded(query) if lost else query))
    except (ValueError, OSError) as exc:
        if is_missing_file(exc):
            raise LostIndexPart(str(exc).split("\n")[0][:200]) from exc
        raise


def read_rows(table: Any, lost: LostRows | None, **query: Any) -> list[dict[str, Any]]:
    """:func:`read_table`'s rows."""
    return read_table(table, lost, **query).to_pylist()


def nearest_rows(table: Any, lost: LostRows, query: dict[str, Any]) -> list[dict[str, Any]]:
    """``query``'s nearest neighbours (its ``nearest``: ``column``, ``q``, ``k``, cosine)
    by comparing every vector of the fragments ``lost`` leaves, a batch at a time, with
    ``_distance`` as Lance gives it; its ``filter`` applies."""
    nearest = query["nearest"]
    column, k = nearest["column"], int(nearest["k"])
    wanted = [c for c in query.get("columns") or [] if c != "_distance"]
    asked = np.asarray(nearest["q"], dtype=np.float32)
    asked = asked / (float(np.linalg.norm(asked)) or 1.0)
    readable = [f for f in table.get_fragments() if f.fragment_id not in lost.fragments]
    scanner = table.scanner(
        fragments=readable,
        columns=list(dict.fromkeys([*wanted, column])),
        filter=query.get("filter"),
    )
    best: list[tuple[float, dict[str, Any]]] = []
    for batch in scanner.to_batches():
        if not batch.num_rows:
            continue
        vectors = np.stack(batch.column(column).to_numpy(zero_copy_only=False)).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1)
        similarity = vectors @ asked / np.where(norms == 0, 1.0, norms)
        top = np.argsort(-similarity)[:k]
        rows = batch.select(wanted).take(top).to_pylist() if wanted else [{} for _ in top]
        best += [(float(similarity[i]), row) for i, row in zip(top, rows, strict=True)]
        best = sorted(best, key=lambda pair: -pair[0])[:k]
    return [{**row, "_distance": 1.0 - similarity} for similarity, row in best]


_READ_FAILED = (
    "LanceError(IO)",
    "Generic S3 error",
    "error sending request",
    "Timeout",
    "timed out",
)
"""How Lance says reading the store failed (its errors are ValueErrors): the store's trouble,
not the query's."""


def failed_read(exc: LostIndexPart | ValueError | OSError, query: str) -> BucketdigestError:
    """What a search of ``query`` that failed reading the index with ``exc`` tells its
    caller: a lost file is damage (until the next indexing), a store that could not be read
    is worth another try, anything else is the query's."""
    first_line = str(exc).split("\n")[0][:200]
    if isinstance(exc, LostIndexPart) or is_missing_file(exc):
        return IndexDamaged(
            f"the index lacks one of its files ({first_line}): searches fail until the next "
            f"indexing rebuilds it; {REBUILD_HINT} now"
        )
    if isinstance(exc, OSError) or any(sign in str(exc) for sign in _READ_FAILED):
        return SearchIndexError(f"the index could not be read ({first_line}): try again shortly")
    return InvalidQuery(f"the index cannot answer {query!r}: {exc}")
