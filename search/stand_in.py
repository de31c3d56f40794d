"""Passages whose index files are lost, read again from their documents' results.

Between the loss of an index data file and the indexer's next run, the passages in it cannot be
searched; their documents' results (``store/out/``), which the index is made from, are whole.
So a searcher that finds passages lost works out which documents they belonged to (the
documents' table names every document; the readable passages name the others), reads some of
their results (:data:`MAX_DOCUMENTS`, :data:`MAX_BYTES`) as the indexer would, into a small
index of its own in a temporary folder, and searches it beside the bucket's: those documents
answer with their passages, pages and headings, by words and by meaning, as if nothing was
lost. Documents past the caps, or whose result cannot be read either, are still found as
documents (their row in the documents' table). The stand-in lives as long as the searcher: a
server replaces its searcher when the indexer's rebuild switches the index.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from bucketdigest.search.generation import table_names
from bucketdigest.search.index import SearchIndex
from bucketdigest.search.indexer import catch_up
from bucketdigest.search.location import IndexLocation
from bucketdigest.search.lost_parts import LostRows
from bucketdigest.search.tables import dataset
from bucketdigest.shared import keys
from bucketdigest.shared.store import ObjectInfo, Store

log = logging.getLogger(__name__)

MAX_DOCUMENTS = 500
MAX_BYTES = 256 << 20
"""The most documents, and result bytes, one searcher reads again (a HEAD and a GET of each
zip, once): a loss larger than this is a rebuild's business, and the rest are found as
documents."""
HEAD_THREADS = 8


@dataclass(frozen=True)
class StandIn:
    """A small index of the documents whose passages are lost, made from their results."""

    chunks: Any
    documents: Any
    read: int
    """Documents whose passages it holds."""
    missed: int
    """Documents whose passages are lost and that it does not hold (past the cap, or their
    result unreadable)."""
    folder: tempfile.TemporaryDirectory[str]
    """Where its tables lie; removed with it."""


def lost_documents(chunks: Any, documents: Any, lost: LostRows) -> list[str]:
    """The documents of the documents' table that no readable passage of ``chunks`` names
    (every document when which fragments are lost is not known)."""
    present: set[str] = set()
    if lost.fragments:
        readable = [f for f in chunks.get_fragments() if f.fragment_id not in lost.fragments]
        if readable:
            scanner = chunks.scanner(fragments=readable, columns=["digest"])
            for batch in scanner.to_batches():
                present.update(batch.column("digest").to_pylist())
    every = documents.to_table(columns=["digest"]).column("digest").to_pylist()
    return sorted(set(every) - present)


def _chosen(store: Store, digests: list[str]) -> dict[str, ObjectInfo]:
    """The results of the first of ``digests`` within :data:`MAX_DOCUMENTS` and
    :data:`MAX_BYTES` (those that are there)."""
    wanted = digests[:MAX_DOCUMENTS]
    with ThreadPoolExecutor(HEAD_THREADS) as heads:
        found = list(heads.map(lambda digest: store.head(keys.out_key(digest)), wanted))
    chosen, size = {}, 0
    for digest, info in zip(wanted, found, strict=True):
        if info is None or size + info.size > MAX_BYTES:
            continue
        chosen[digest], size = info, size + info.size
    return chosen


def read_again(store: Store, digests: list[str]) -> StandIn:
    """A stand-in index of the first of ``digests`` (within :data:`MAX_DOCUMENTS` and
    :data:`MAX_BYTES`), from their results in ``store``."""
    folder = tempfile.TemporaryDirectory(prefix="bucketdigest-stand-in-")
    location = IndexLocation(str(Path(folder.name)), {})
    chosen = _chosen(store, digests)
    report = catch_up(store, SearchIndex.open(location, create=True), only=chosen)
    chunk_table, document_table = (dataset(location, name) for name in table_names(""))
    read = report.added
    log.warning(
        "searches read the passages of %d of the %d documents whose index files are lost "
        "from their results until the next indexing rebuilds the index%s",
        read,
        len(digests),
        "".join(f"; {digest}: {why}" for digest, why in sorted(report.skipped.items())[:5]),
    )
    return StandIn(chunk_table, document_table, read, len(digests) - read, folder)


Searching = TypeVar("Searching")


class OnceMade(Generic[Searching]):
    """A searcher's stand-in, made the first time it finds passages lost (never again, made
    or not), and what it read, for the searcher's word on its damage."""

    def __init__(self, results: Callable[[], Store] | None) -> None:
        self._results = results
        self._tried = False
        self._made: tuple[Searching, StandIn] | None = None
        self._lock = threading.Lock()

    def searcher(
        self, chunks: Any, documents: Any, lost: LostRows, wrap: Callable[[StandIn], Searching]
    ) -> Searching | None:
        """The stand-in of the passages ``lost`` leaves out of ``chunks``, as ``wrap`` makes
        it searchable (None without a store to read them from, or when they cannot be read)."""
        with self._lock:
            if not self._tried and self._results is not None:
                self._tried = True
                try:
                    digests = lost_documents(chunks, documents, lost)
                    made = read_again(self._results(), digests) if digests else None
                except Exception:  # the searches go on as they did without it
                    log.exception("the passages whose index files are lost cannot be read again")
                    made = None
                if made is not None:
                    self._made = (wrap(made), made)
            return self._made[0] if self._made else None

    def said(self, rows: int, unanswered: list[str]) -> str | None:
        """The damage as searches meet it: ``rows`` passages lost, the rankings
        ``unanswered``, and what this stand-in read (None: nothing found lost)."""
        stand_in = self._made[1] if self._made else None
        if stand_in is not None and not stand_in.missed and not unanswered:
            return (
                f"{rows} passages whose index files are lost are read from their "
                f"{stand_in.read} documents' results until the next indexing rebuilds the index"
            )
        said = [f"{rows} passages whose index files are lost"] if rows else []
        said += [f"the {ranking} ranking (its index files are lost)" for ranking in unanswered]
        if not said:
            return None
        read = f" ({stand_in.read} documents' read from their results)" if stand_in else ""
        return f"searches leave out {' and '.join(said)}{read} until the next indexing rebuilds it"
