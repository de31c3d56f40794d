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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
