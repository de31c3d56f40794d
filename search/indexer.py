"""Keeping the index current: documents done in the bucket become rows, reprocessed ones
(a new zip ETag) replace theirs, removed ones lose theirs.

What to do is derived each time from the bucket alone: ``store/out/`` listed against the
``documents`` table's (digest, etag) pairs, so nothing is ever lost to a crash and a retried,
taken-over or duplicate run leaves no duplicate: chunks are upserted by id in one commit that
also deletes the chunks those documents no longer have, and a document's row (the sign it is
indexed) is written after its chunks. One indexer at a time holds the lease
(:mod:`bucketdigest.search.lease`); workers run :func:`index_duty` as part of their monitor
duty, at most once per interval across the fleet.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bucketdigest.search import generation, lease
from bucketdigest.search.index import WORD_VECTOR, SearchIndex, chunk_schema, document_schema
from bucketdigest.search.location import IndexLocation, index_location
from bucketdigest.search.result_reading import read_one, read_results
from bucketdigest.shared import keys
from bucketdigest.shared.config import MONITOR_SECONDS, StoreSettings, open_store
from bucketdigest.shared.errors import (
    CorruptRecord,
    IndexDamaged,
    IndexMismatch,
    IndexNotFound,
    NotFound,
)
from bucketdigest.shared.lifeline import deaf_to_ctrl_c, exit_with_parent
from bucketdigest.shared.logs import LogSetup
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.store import ObjectInfo, Store

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as EventType

    from bucketdigest.search.rows import DocumentRows

log = logging.getLogger(__name__)

BATCH_DOCUMENTS = 256
"""Documents per commit: few commits (each adds a fragment), bounded memory."""
LEASE_SECONDS = 600.0
REGISTRY_LISTING_FROM = 64
"""From this many documents on, list the whole registry once rather than per document."""


@dataclass
class IndexReport:
    """What one indexing run did."""

    added: int = 0
    replaced: int = 0
    removed: int = 0
    chunks: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    """Digest → why it could not be indexed (it is tried again next run)."""
    maintenance: list[str] = field(default_factory=list)
    seconds: float = 0.0
    busy: str = ""
    """Why nothing was done: another indexer holds the lease, or the index is fresh."""
    damage: str = ""
    """Why the index was found unusable and rebuilt beside (files missing, say)."""

    def line(self) -> str:
        if self.busy:
            return f"index: skipped ({self.busy})"
        rebuilt = f"; rebuilt: {self.damage}" if self.damage else ""
        return (
            f"index: {self.added} added, {self.replaced} replaced, {self.removed} removed "
            f"({self.chunks} chunks, {len(self.skipped)} skipped) in {self.seconds:.1f} s"
            f"{rebuilt}"
        )


def indexed_documents(store: Store, settings: StoreSettings) -> set[str]:
    """The documents the index searches read holds (none when there is no index yet)."""
    searched = generation.current(store).current
    try:
        return set(_indexed(SearchIndex.open(index_location(settings), generation=searched)))
    except IndexNotFound:
        return set()


def _indexed(index: SearchIndex) -> dict[str, str]:
    table = index.documents.to_arrow() if index.documents.count_rows() else None
    if table is None:
        return {}
    return dict(zip(table["digest"].to_pylist(), table["etag"].to_pylist(), strict=True))


def _origins(store: Store, digests: list[str]) -> dict[str, list[SourceRecord]]:
    """The registry records of ``digests`` (one LIST of the whole registry when many)."""
    wanted = set(digests)
    if len(digests) >= REGISTRY_LISTING_FROM:
        listed = [i.key for i in store.list(keys.REGISTRY_DOCS_PREFIX)]
    else:
        listed = [i.key for d in digests for i in store.list(keys.registry_doc_prefix(d))]
    found: dict[str, list[SourceRecord]] = {d: [] for d in digests}
    for key in listed:
        digest, _ = keys.parse_registry_doc_key(key)
        if digest in wanted:
            try:
                found[digest].append(SourceRecord.from_json(store.get(key).data))
            except (NotFound, CorruptRecord) as exc:
                log.warning("%s: skipping registry record: %s", key, exc)
    return found


def _commit(index: SearchIndex, batch: list[DocumentRows], *, fresh: bool) -> None:
    """Chunks first (upsert by id, deleting the batch's stale chunks), documents second.
    ``fresh``: the tables held no row when this run began, so its batches (distinct
    documents) are appended as they are (an upsert costs three times as much)."""
    import numpy as np
    import pyarrow as pa

    if not batch:
        return
    schema = chunk_schema()
    stacked = {
        "vector": np.concatenate([rows.vectors for rows in batch]),
        WORD_VECTOR: np.concatenate([rows.word_vectors for rows in batch]),
    }
    columns: dict[str, list] = {name: [] for name in schema.names if name not in stacked}
    for rows in batch:
        for name in columns:
            columns[name].extend(rows.chunks[name])
    arrays = {name: pa.array(columns[name], schema.field(name).type) for name in columns}
    for name, vectors in stacked.items():
        arrays[name] = pa.FixedSizeListArray.from_arrays(
            pa.array(vectors.ravel(), pa.float32()), vectors.shape[1]
        )
    chunk_table = pa.table(arrays, schema=schema)
    documents = pa.Table.from_pylist([rows.document for rows in batch], schema=document_schema())
    if fresh:
        index.chunks.add(chunk_table)
        index.documents.add(documents)
        return
    listed = ", ".join(f"'{rows.digest}'" for rows in batch)
    (
        index.chunks.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(f"digest IN ({listed})")
        .execute(chunk_table)
    )
    (
        index.documents.merge_insert("digest")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(documents)
    )


def _remove(index: SearchIndex, digests: Iterable[str]) -> int:
    gone = sorted(digests)
    for start in range(0, len(gone), BATCH_DOCUMENTS):
        listed = ", ".join(f"'{d}'" for d in gone[start : start + BATCH_DOCUMENTS])
        index.chunks.delete(f"digest IN ({listed})")
        index.documents.delete(f"digest IN ({listed})")
    return len(gone)


def catch_up(
    store: Store,
    index: SearchIndex,
    *,
    keep_lease: Callable[[], bool] = lambda: True,
    only: Mapping[str, ObjectInfo] | None = None,
) -> IndexReport:
    """Bring ``index`` up to date with the bucket; ``keep_lease`` is asked between commits
    (False: stop, the lease is lost or the indexer is asked to stop). ``only``: index these
    results alone, by digest (a stand-in for passages whose index files are lost,
    :mod:`.stand_in`)."""
    started = time.perf_counter()
    report = IndexReport()

    # what to do: the results against the rows (hash and zip ETag)
    if only is None:
        done = {keys.parse_out_key(i.key): i for i in store.list(keys.OUT_PREFIX)}
    else:
        done = dict(only)
    indexed = _indexed(index)
    fresh = not indexed and index.chunks.count_rows() == 0
    report.removed = _remove(index, set(indexed) - set(done)) if only is None else 0
    todo = sorted(d for d, info in done.items() if indexed.get(d) != info.etag)
    origins = _origins(store, todo) if todo else {}
    parts = [
        todo[start : start + BATCH_DOCUMENTS] for start in range(0, len(todo), BATCH_DOCUMENTS)
    ]

    # read results a batch ahead, commit each batch while the next is read
    with (
        tempfile.TemporaryDirectory(prefix="bucketdigest-index-") as scratch,
        ThreadPoolExecutor(1) as committer,
    ):
        committing: Future[None] | None = None
        for done_so_far, (part, downloads) in enumerate(
            read_results(store, parts, done, Path(scratch))
        ):
            if not keep_lease():
                log.warning("index: lease lost or asked to stop; %d batches done", done_so_far)
                break
            batch = []
            for digest, download in zip(part, downloads, strict=True):
                rows = read_one(download.result(), digest, origins[digest])
                if isinstance(rows, str):
                    report.skipped[digest] = rows
                    continue
                batch.append(rows)
                report.chunks += len(rows.vectors)
                if digest in indexed:
                    report.replaced += 1
                else:
                    report.added += 1
            if committing is not None:
                committing.result()
            # Lance commits in Rust without the GIL: this batch is written while the next parses
            committing = committer.submit(_commit, index, batch, fresh=fresh)
        if committing is not None:
            committing.result()

    if keep_lease():  # compaction and cleanup rewrite the tables: only while they are ours
        report.maintenance = index.maintain()
    else:
        log.warning("index: lease lost or asked to stop; leaving maintenance to the next run")
    report.seconds = time.perf_counter() - started
    return report


def _index_damage(store: Store, location: IndexLocation, searched: str) -> str:
    """Why the index searches read cannot be used as it is ("" when it can, or when there
    is none yet): objects it names that the bucket lacks, tables that do not open, or tables
    an older bucketdigest (or another embedding model) made, which are rebuilt the same way."""
    try:
        missing = SearchIndex.open(location, generation=searched).missing_files(store)
    except IndexNotFound:
        return ""
    except (IndexDamaged, IndexMismatch) as exc:
        return str(exc)
    if not missing:
        return ""
    return f"the index lacks {len(missing)} of its files ({', '.join(missing[:3])})"


def index_bucket(
    store: Store,
    settings: StoreSettings,
    *,
    rebuild: bool = False,
    min_interval: float = 0.0,
    wait: float = 0.0,
    holder: str | None = None,
    lease_seconds: float = LEASE_SECONDS,
    stopping: Callable[[], bool] = lambda: False,
) -> IndexReport:
    """Take the indexer's lease (waiting up to ``wait`` seconds for another indexer to
    finish), then bring the index up to date, or with ``rebuild`` build it anew beside the
    one searches read meanwhile, and switch to it once complete (:mod:`.generation`). Nothing
    is done when the index was brought up to date less than ``min_interval`` seconds ago.
    Once ``stopping`` says so, the wait ends and catching up stops after the batch it
    commits, as when the lease is lost; the lease is released."""
    holder = holder or f"{socket.gethostname()}-indexer"
    deadline = time.monotonic() + wait
    while isinstance(held := lease.acquire(store, holder, lease_seconds, min_interval), lease.Busy):
        if time.monotonic() >= deadline or stopping():
            return IndexReport(busy=held.reason)
        time.sleep(1.0)
    current = [held]

    def keep_lease() -> bool:
        if stopping():
            return False
        renewed = lease.renew(store, current[0], lease_seconds)
        if renewed is None:
            return False
        current[0] = renewed
        return True

    report = IndexReport(busy="failed")
    try:
        location = index_location(settings)
        searched = generation.current(store).current
        if not rebuild and (damage := _index_damage(store, location, searched)):
            log.error("%s: rebuilding it beside", damage)
            report.damage, rebuild = damage, True
        building = generation.new_name(store) if rebuild else searched
        index = SearchIndex.open(location, create=True, generation=building)
        report = replace(catch_up(store, index, keep_lease=keep_lease), damage=report.damage)
        if rebuild and keep_lease():
            generation.switch(store, building)
            report.maintenance.append(f"switched searches to the rebuilt index ({building})")
        dropped = generation.drop_unused(
            store, index.db, held_since=held.lease.since, still_held=keep_lease
        )
        report.maintenance += [f"dropped {name}" for name in dropped]
        return report
    finally:
        lease.release(store, current[0], report.line(), report.skipped)


LEAVING_WAIT = 120.0
"""How long a worker that leaves waits for another indexer to finish before it catches up."""


_asked_to_stop: EventType
"""In an indexer process :class:`IndexDuty` started (set there by :func:`_indexer_started`):
set when its worker is asked to stop."""


def _indexer_started(asked_to_stop: EventType) -> None:
    """The indexer process's first call: it ends with its worker and keeps the event its
    worker sets when asked to stop (an event reaches a process only as it starts)."""
    global _asked_to_stop
    exit_with_parent()
    _asked_to_stop = asked_to_stop


def _index_once(settings: StoreSettings, leaving: bool, every: float, logs: LogSetup) -> str:
    """One :class:`IndexDuty` run, in the process it starts (logging as its worker does): the
    report's line, or "" when another indexer did the work."""
    logs.apply()
    store = open_store(settings, self_test=False)
    stopping = _asked_to_stop.is_set
    if leaving:
        report = index_bucket(store, settings, wait=LEAVING_WAIT, stopping=stopping)
    else:
        report = index_bucket(store, settings, min_interval=every, stopping=stopping)
    return "" if report.busy else report.line()


@dataclass(frozen=True)
class IndexDuty:
    """A worker's share of indexing: catch up at most every ``every`` seconds fleet-wide,
    and once more, whatever the interval, when the worker leaves for want of work (so the
    last documents it finished are searchable).

    Each run is a process of its own, which ends with it: indexing loads Lance, Arrow and
    (for documents without chunks) the embedding model, half a gigabyte that a worker kept
    for the rest of its life when it indexed in its own process. (Indexing in the digester
    process instead kept Lance there beside the converter: a worker's peak was 0.24 GiB
    higher at the median, docs/benchmarks.md.) The process ends with its worker too, and is
    not started at all while another indexer holds the lease or the index is fresh, nor in a
    bucket that has neither results nor an index yet."""

    settings: StoreSettings
    every: float = MONITOR_SECONDS
    when_leaving: bool = True
    """Index once more when the worker leaves; False when whoever started the workers indexes
    after they are gone (``run``), so that each of them does not start an indexer first."""

    def __call__(
        self,
        store: Store,
        leaving: bool = False,
        make_room: Callable[[], None] | None = None,
        stopping: threading.Event | None = None,
    ) -> int:
        """Index now if it is this worker's turn, calling ``make_room`` first. Once
        ``stopping`` is set (the worker was asked to stop), the indexer stops after the batch
        it commits, and this returns: a worker's Ctrl-C does not wait for a whole catch-up."""
        if leaving and not self.when_leaving:
            return 0
        if not leaving and lease.busy(store, self.every) is not None:
            return 0  # another worker indexes, or did moments ago: no process to start
        if not any(True for _ in store.list(keys.OUT_PREFIX, limit=1)) and not any(
            True for _ in store.list(keys.INDEX_PREFIX, limit=1)
        ):
            return 0  # nothing to index, nothing to remove from an index: a new bucket
        if make_room is not None:
            make_room()
        context = multiprocessing.get_context("spawn")
        asked_to_stop = context.Event()
        with ProcessPoolExecutor(
            1, mp_context=context, initializer=_indexer_started, initargs=(asked_to_stop,)
        ) as indexer:
            with deaf_to_ctrl_c():  # the process starts here; its worker tells it to stop
                run = indexer.submit(
                    _index_once, self.settings, leaving, self.every, LogSetup.current()
                )
            while stopping is not None and not wait([run], timeout=0.5).done:
                if stopping.is_set():
                    asked_to_stop.set()
                    break
            line = run.result()
        if line:
            log.info("%s", line)
        return 0
