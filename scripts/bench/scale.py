"""``status``, ``ls`` and the monitor's consistency sweep on a bucket of a million finished
documents (synthetic keys: a source, a result and a registry record each, 1,000 queued, 10
dead letters, 20 ingest runs, and the search index's documents table), on the local store,
and on moto (in-process, fewer documents: its listing is linear in the bucket per page).
Store requests are counted by the same wrapper on both."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import numpy as np
from common import new_bucket, table
from moto import mock_aws
from moto.s3.models import s3_backends

from bucketdigest.monitor.catalog import catalog
from bucketdigest.monitor.repair import SWEEP_BATCH, reconcile
from bucketdigest.monitor.status import collect_status
from bucketdigest.search.catalog import indexed_locations
from bucketdigest.search.index import (
    CHUNKS,
    DOCUMENTS,
    SCHEMA_VERSION,
    chunk_schema,
    document_schema,
    lance_environment,
)
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.embedding import DIMENSION
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Failure, IngestRun, SourceRecord, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.stores.s3 import S3Store

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bucketdigest/scale"
QUEUED = 1000
FAILED = 10
RUNS = 20
SOURCES = ("git@example.org:rules/core.git", "/srv/scans/archive", "/srv/notes")
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _digest(index: int) -> str:
    return hashlib.sha256(b"doc-%d" % index).hexdigest()


def _objects(count: int) -> Iterator[tuple[str, bytes]]:
    """Every key of the synthetic bucket and its body."""
    for index in range(count + QUEUED):
        digest = _digest(index)
        source = SOURCES[index % len(SOURCES)]
        record = SourceRecord(digest, source, f"books/{index:07d}.pdf", 1000, NOW)
        yield keys.raw_key(digest, "pdf"), b"%PDF-"
        yield keys.registry_doc_key(digest, digest[:16]), record.to_json()
        ticket = Ticket(digest, "pdf", 1000, (record.path,), NOW)
        if index < count:
            yield keys.out_key(digest), b"PK"
        elif index < count + FAILED:
            failure = Failure(ticket, "w", NOW, "synthetic failure", retryable=False)
            yield keys.queue_key(QueueState.FAILED, digest), failure.to_json()
        else:
            yield keys.queue_key(QueueState.TODO, digest), ticket.to_json()
    for run in range(RUNS):
        record = IngestRun(f"2026110{run % 10}T000000Z-bench{run}", SOURCES, NOW, NOW)
        yield keys.run_key(record.run_id), record.to_json()


def _documents(count: int, batch: int = 100_000) -> Iterator[Any]:
    import pyarrow as pa

    schema = document_schema()
    for start in range(0, count, batch):
        indices = range(start, min(count, start + batch))
        digests = [_digest(i) for i in indices]
        paths = [f"books/{i:07d}.pdf" for i in indices]
        sources = [SOURCES[i % len(SOURCES)] for i in indices]
        vectors = np.zeros((len(digests), DIMENSION), dtype=np.float32)
        columns = {
            "digest": digests,
            "title": paths,
            "names": [[p] for p in paths],
            "sources": [[s] for s in sources],
            "locations": [f"{s}\t{p}\n" for s, p in zip(sources, paths, strict=True)],
            "file_type": ["pdf"] * len(digests),
            "tags": [[] for _ in digests],
            "text": paths,
            "terms": paths,
            "vector": pa.FixedSizeListArray.from_arrays(vectors.reshape(-1), DIMENSION),
            "etag": ["x"] * len(digests),
            "summary": [""] * len(digests),
            "pages": [1] * len(digests),
            "chunks": [0] * len(digests),
            "indexed_at": [NOW] * len(digests),
        }
        yield pa.table(columns, schema=schema)


def _build_index(uri: str, count: int) -> None:
    import lancedb

    lance_environment()
    db = lancedb.connect(uri)
    db.create_table(CHUNKS, schema=chunk_schema(), mode="overwrite")
    documents = db.create_table(DOCUMENTS, schema=document_schema(), mode="overwrite")
    for part in _documents(count):
        documents.add(part)


def _local_bucket(count: int) -> Path:
    """Built once and kept (three files per document) under ~/.cache."""
    root = CACHE / f"local-{count}-index{SCHEMA_VERSION}"  # a new index schema: built anew
    if (root / "complete").exists():
        return root
    store = LocalStore(root)
    for key, body in _objects(count):
        path = store.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    _build_index(str(root / keys.INDEX_PREFIX.rstrip("/")), count)
    (root / "complete").write_text("")
    return root


def _measure(store: Store, work: Callable[[Store], object]) -> tuple[float, int]:
    counting = CountingStore(store)
    started = time.perf_counter()
    work(counting)
    return time.perf_counter() - started, counting.total


def _rows(backend: str, count: int, store: Store, settings: StoreSettings) -> list[tuple[str, ...]]:
    source = SOURCES[0]
    cases: list[tuple[str, Callable[[Store], object]]] = [
        ("status", collect_status),
        ("ls (registry: a GET per file, before)", catalog),
        ("ls (index + registry listing)", lambda s: catalog(s, None, indexed_locations(settings))),
        (
            f"ls --source {source.split(':')[0]}... (index)",
            lambda s: catalog(s, source, indexed_locations(settings, source)),
        ),
        ("consistency sweep, whole bucket (before)", lambda s: reconcile(s, batch=10**9)),
        (f"consistency sweep, one run ({SWEEP_BATCH:,} sources)", reconcile),
    ]
    rows = []
    for name, work in cases:
        if "before" in name and backend == "moto" and count > 20_000:
            continue
        seconds, requests = _measure(store, work)
        rows.append((backend, f"{count:,}", name, f"{requests:,}", f"{seconds:.1f}"))
        if isinstance(store, LocalStore):
            (store.root / keys.SWEEP_CURSOR_KEY).unlink(missing_ok=True)
    return rows


def _moto_rows(count: int) -> list[tuple[str, ...]]:
    with mock_aws(), tempfile.TemporaryDirectory() as scratch:
        bucket = new_bucket(None)  # type: ignore[arg-type]
        backend = s3_backends["123456789012"]["global"]
        for key, body in _objects(count):
            backend.put_object(bucket, "bench/" + key, body)
        # the index sits on the local disk here: moto's in-process S3 is not reachable by
        # Lance's own client; what is measured is the store requests and their time
        settings = StoreSettings(bucket=str(Path(scratch)))
        _build_index(str(Path(scratch) / keys.INDEX_PREFIX.rstrip("/")), count)
        store = S3Store(bucket, "bench", client=boto3.client("s3"))
        return _rows("moto", count, store, settings)


def run(quick: bool) -> str:
    local_count, moto_count = (300, 300) if quick else (1_000_000, 100_000)
    root = _local_bucket(local_count)
    rows = _rows("local", local_count, LocalStore(root), StoreSettings(bucket=str(root)))
    rows += _moto_rows(moto_count)
    header = ("store", "finished documents", "operation", "store requests", "seconds")
    return (
        f"{QUEUED:,} queued and {FAILED} dead-lettered documents besides; "
        f"targets: `status` ≤ 1,100 requests and ≤ 10 s on the local store at 1,000,000.\n\n"
        + table(header, rows)
    )
