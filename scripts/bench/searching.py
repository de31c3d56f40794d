"""Search: query latency by index size and store, a cold CLI search, indexing throughput, index
size and build time, and retrieval quality per mode."""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import moto_server, new_bucket, table
from searching_data import (
    put_result,
    quality_queries,
    texts,
    topic_documents,
    unit_vectors,
    vocabulary,
)

from bucketdigest.search.index import SearchIndex, chunk_schema
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.location import index_location
from bucketdigest.search.query import Level, Mode, Searcher, SearchRequest
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.embedding import shared_embedder
from bucketdigest.shared.stores.local import LocalStore

BATCH = 100_000
BIN = Path(sys.executable).parent


def _digest(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def _fill(settings: StoreSettings, rows: int, rng: np.random.Generator) -> tuple[float, float]:
    """A chunks table of ``rows`` synthetic rows; (write seconds, index build seconds)."""
    words, p = vocabulary()
    index = SearchIndex.create_empty(index_location(settings))
    schema = chunk_schema()
    started = time.perf_counter()
    for start in range(0, rows, BATCH):
        count = min(BATCH, rows - start)
        digests = [_digest(f"doc-{(start + i) // 50}") for i in range(count)]
        vectors = unit_vectors(count, rng)
        columns = {
            "digest": digests,
            "title": [f"Book {d[:6]}" for d in digests],
            "names": [[f"books/{d[:8]}.pdf"] for d in digests],
            "sources": [["bench"]] * count,
            "locations": [f"bench\tbooks/{d[:8]}.pdf\n" for d in digests],
            "file_type": ["pdf"] * count,
            "tags": [["rules"]] * count,
            "text": texts(count, words, p, rng),
            "id": [f"{d}:1:{start + i}" for i, d in enumerate(digests)],
            "page": list(range(count)),
            "part": [1] * count,
            "headings": [["Chapter"]] * count,
        }
        arrays = {k: pa.array(v, schema.field(k).type) for k, v in columns.items()}
        arrays["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 384)
        index.chunks.add(pa.table(arrays, schema=schema))
    written = time.perf_counter() - started
    started = time.perf_counter()
    index.maintain()  # the full-text and vector indexes; no compaction (10 fragments)
    return written, time.perf_counter() - started


def _queries(count: int, rng: np.random.Generator) -> list[str]:
    words, p = vocabulary(3000)
    return [" ".join(rng.choice(words, size=rng.integers(2, 5), p=p)) for _ in range(count)]


def _timed(call: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f}"


def _latency_row(label: str, settings: StoreSettings, queries: list[str]) -> tuple[str, ...]:
    searcher = Searcher.open(settings)
    cells = []
    for mode in (Mode.KEYWORD, Mode.SEMANTIC, Mode.HYBRID):
        for query in queries[:3]:  # warm: model loaded, index caches filled
            searcher.search(SearchRequest(query, mode=mode))
        samples = []
        for query in queries:
            samples += _timed(lambda q=query, m=mode: searcher.search(SearchRequest(q, mode=m)), 1)
        cells.append(_percentiles(samples))
    filtered = [
        _timed(lambda q=q: searcher.search(SearchRequest(q, file_type="pdf", tag="rules")), 1)[0]
        for q in queries
    ]
    return (label, *cells, _percentiles(filtered))


def _du(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def latency(quick: bool) -> str:
    sizes = [2_000] if quick else [10_000, 100_000, 1_000_000]
    moto_sizes = [2_000] if quick else [10_000, 100_000]
    rng = np.random.default_rng(1)
    queries = _queries(10 if quick else 100, rng)
    rows, builds = [], []
    cold_line = ""
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            bucket = Path(scratch) / f"local-{size}"
            settings = StoreSettings(bucket=str(bucket))
            written, built = _fill(settings, size, rng)
            rows.append(_latency_row(f"local, {size:,} chunks", settings, queries))
            size_mb = _du(bucket / "index")
            builds.append((f"{size:,}", f"{written:.1f}", f"{built:.1f}", f"{size_mb:,.0f}"))
            if size == (2_000 if quick else 100_000):
                cold_line = _cold(bucket, queries)
        with moto_server() as endpoint:
            for size in moto_sizes:
                settings = StoreSettings(
                    bucket=f"s3://{new_bucket(endpoint)}/bench", endpoint_url=endpoint
                )
                _fill(settings, size, rng)
                rows.append(_latency_row(f"moto server, {size:,} chunks", settings, queries))
    head = (
        f"Warm `Searcher.search` (query embedding, filters, names and snippets included), "
        f"{len(queries)} queries of 2-4 words per mode, p50 / p95 in ms; synthetic chunks of "
        f"20-40 words drawn from the Python standard library's words (Zipf), random unit "
        f"vectors, one IVF-PQ index (cosine, nprobes 20) from 50,000 rows on, full-text index "
        f"always. The filtered column is hybrid with `--type pdf --tag rules`.\n\n"
    )
    return (
        head
        + table(("index", "keyword", "semantic", "hybrid", "hybrid, filtered"), rows)
        + "\n\nIndex build on the local store (table written in 100,000-row batches, then "
        "full-text and vector indexes):\n\n"
        + table(("chunks", "write s", "index build s", "size MiB"), builds)
        + "\n\n"
        + cold_line
    )


def _cold(bucket: Path, queries: list[str]) -> str:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    command = [str(BIN / "bucketdigest"), "search", "--bucket", str(bucket), "--limit", "10"]
    subprocess.run([*command, "warm the page cache"], check=True, capture_output=True, env=env)
    samples = []
    for query in queries[:5]:
        started = time.perf_counter()
        subprocess.run([*command, query], check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - started)
    return (
        f"Cold `bucketdigest search` (a new process each time: interpreter, imports, model "
        f"and index opened, hybrid query, 10 hits printed), {bucket.name.split('-')[1]} chunks: "
        f"median {statistics.median(samples):.2f} s, best {min(samples):.2f} s over "
        f"{len(samples)} runs.\n"
    )


def indexing(quick: bool) -> str:
    documents = 40 if quick else 2_000
    increments = [20] if quick else [100, 250, 500]
    chunks_per_doc = 50
    rng = np.random.default_rng(2)
    words, p = vocabulary()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        store = LocalStore(Path(scratch) / "bucket")
        settings = StoreSettings(bucket=str(store.root))

        def add(count: int, tag: str) -> None:
            for n in range(count):
                chunks = texts(chunks_per_doc, words, p, rng)
                put_result(
                    store,
                    _digest(f"{tag}-{n}"),
                    f"{tag}/{n}.pdf",
                    chunks,
                    unit_vectors(chunks_per_doc, rng),
                    title=f"Book {n}",
                    summary=chunks[0],
                )

        add(documents, "base")
        started = time.perf_counter()
        report = index_bucket(store, settings, rebuild=True)
        seconds = time.perf_counter() - started
        rows.append(
            (
                f"rebuild, local store, {documents:,} documents",
                f"{report.chunks:,}",
                f"{seconds:.1f}",
                f"{report.chunks / seconds:,.0f}",
                f"{documents / seconds:,.0f}",
            )
        )
        for count in increments:
            add(count, f"more-{count}")
            started = time.perf_counter()
            report = index_bucket(store, settings)
            seconds = time.perf_counter() - started
            rows.append(
                (
                    f"incremental, local store, {count} new of {documents + count:,}",
                    f"{report.chunks:,}",
                    f"{seconds:.1f}",
                    f"{report.chunks / seconds:,.0f}",
                    f"{count / seconds:,.0f}",
                )
            )
            documents += count
    with moto_server() as endpoint:
        settings = StoreSettings(bucket=f"s3://{new_bucket(endpoint)}/bench", endpoint_url=endpoint)
        store = open_store(settings)
        base, more = (20, 10) if quick else (400, 200)
        for n in range(base):
            put_result(
                store,
                _digest(f"m{n}"),
                f"m/{n}.pdf",
                texts(50, words, p, rng),
                unit_vectors(50, rng),
                title=f"Book {n}",
            )
        index_bucket(store, settings)
        for n in range(more):
            put_result(
                store,
                _digest(f"n{n}"),
                f"n/{n}.pdf",
                texts(50, words, p, rng),
                unit_vectors(50, rng),
                title=f"Book {n}",
            )
        started = time.perf_counter()
        report = index_bucket(store, settings)
        seconds = time.perf_counter() - started
        rows.append(
            (
                f"incremental, moto server, {more} new of {base + more}",
                f"{report.chunks:,}",
                f"{seconds:.1f}",
                f"{report.chunks / seconds:,.0f}",
                f"{more / seconds:,.0f}",
            )
        )
    return (
        f"`index_bucket` on result zips as workers write them ({chunks_per_doc} chunks each, "
        "vectors included), registry records read for every document; the time includes "
        "listing the bucket, reading the documents table and index maintenance.\n\n"
        + table(("run", "chunks", "seconds", "chunks/s", "documents/s"), rows)
    )


def quality(quick: bool) -> str:
    rng = np.random.default_rng(3)
    words, p = vocabulary()
    embedder = shared_embedder()
    distractors = 20 if quick else 300
    with tempfile.TemporaryDirectory() as scratch:
        store = LocalStore(Path(scratch) / "bucket")
        settings = StoreSettings(bucket=str(store.root))
        targets = {}
        for name, (title, passages) in topic_documents().items():
            digest = _digest(f"topic-{name}")
            targets[name] = digest
            filler = texts(4, words, p, rng)
            chunks = [*passages, *filler]
            put_result(
                store,
                digest,
                f"topics/{name}.pdf",
                chunks,
                embedder.encode(chunks),
                title=title,
                summary=" ".join(passages),
            )
        for n in range(distractors):
            chunks = texts(6, words, p, rng)
            put_result(
                store,
                _digest(f"noise-{n}"),
                f"noise/{n}.pdf",
                chunks,
                embedder.encode(chunks),
                title=f"Notes {n}",
                summary=chunks[0],
            )
        index_bucket(store, settings)
        searcher = Searcher.open(settings)
        rows = []
        for level in (Level.DOCUMENTS, Level.CHUNKS):
            for kind in ("words", "meaning", "all"):
                cells = []
                for mode in (Mode.KEYWORD, Mode.SEMANTIC, Mode.HYBRID):
                    found, reciprocal, total = 0, 0.0, 0
                    for query, qkind, topic in quality_queries():
                        if kind != "all" and qkind != kind:
                            continue
                        total += 1
                        hits = searcher.search(SearchRequest(query, level=level, mode=mode))
                        ranks = [i for i, h in enumerate(hits, 1) if h.digest == targets[topic]]
                        found += bool(ranks)
                        reciprocal += 1 / ranks[0] if ranks else 0.0
                    cells.append(f"{found}/{total} ({reciprocal / total:.2f})")
                rows.append((level.value, kind, *cells))
    return (
        f"Known-item retrieval: {len(topic_documents())} documents on distinct topics (3 "
        f"passages each plus 4 passages of filler) among {distractors} filler documents, real "
        f"all-MiniLM-L6-v2 vectors. Two queries per topic: one in the document's words, one "
        f"in other words. Cell: queries whose document is in the top 10 (mean reciprocal "
        f"rank).\n\n" + table(("level", "queries", "keyword", "semantic", "hybrid"), rows)
    )


def run(quick: bool) -> str:
    parts = [
        "### Latency",
        "",
        latency(quick),
        "",
        "### Indexing throughput",
        "",
        indexing(quick),
        "",
        "### Retrieval quality",
        "",
        quality(quick),
    ]
    return "\n".join(parts)
