"""Search: query latency by index size and store, index build time and size, a cold CLI search;
with indexing throughput and retrieval quality from ``searching_results``."""

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
    texts,
    unit_vectors,
    vocabulary,
)
from searching_results import indexing, quality

from bucketdigest.search.index import WORD_VECTOR, SearchIndex, chunk_schema
from bucketdigest.search.location import index_location
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import fingerprints, index_terms
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.word_embedding import WORD_DIMENSION

BATCH = 100_000
BIN = Path(sys.executable).parent


def _digest(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def _fill(settings: StoreSettings, rows: int, rng: np.random.Generator) -> tuple[float, float]:
    """A chunks table of ``rows`` synthetic rows; (write seconds, index build seconds)."""
    words, p = vocabulary()
    index = SearchIndex.open(index_location(settings), create=True)
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
            "text": (chunk_texts := texts(count, words, p, rng)),
            "terms": [index_terms(text) for text in chunk_texts],
            "fingerprint": fingerprints(chunk_texts, [()] * count),
            "id": [f"{d}:1:{start + i}" for i, d in enumerate(digests)],
            "page": list(range(count)),
            "part": [1] * count,
            "headings": [["Chapter"]] * count,
        }
        arrays = {k: pa.array(v, schema.field(k).type) for k, v in columns.items()}
        arrays["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 384)
        # random: what a search reads of them, not what they mean, is measured here
        words_read = unit_vectors(count, rng, WORD_DIMENSION)
        arrays[WORD_VECTOR] = pa.FixedSizeListArray.from_arrays(
            pa.array(words_read.ravel()), WORD_DIMENSION
        )
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
    cells = []
    for mode in (Mode.KEYWORD, Mode.SEMANTIC, Mode.HYBRID):
        searcher = Searcher.open(settings)  # its kept query vectors would flatter later modes
        for query in queries[:3]:  # warm: model loaded, index caches filled
            searcher.search(SearchRequest(query, mode=mode))
        samples = []
        for query in queries:
            request = SearchRequest(query, mode=mode)
            samples += _timed(lambda s=searcher, r=request: s.search(r), 1)
        cells.append(_percentiles(samples))
    searcher = Searcher.open(settings)
    filtered = [
        _timed(lambda q=q: searcher.search(SearchRequest(q, file_type="pdf", tag="rules")), 1)[0]
        for q in queries
    ]
    return (label, *cells, _percentiles(filtered))


def _du(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def latency(quick: bool) -> str:
    sizes = [500] if quick else [10_000, 100_000, 1_000_000]
    moto_sizes = [500] if quick else [10_000]  # larger: "Search from a bucket" (the copy)
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
            if size == (500 if quick else 100_000):
                cold_line = _cold(bucket, queries, 1 if quick else 5)
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
        f"vectors, an IVF-SQ vector index (cosine, nprobes 20) from 20,000 rows on, full-text "
        f"and filter indexes always. The filtered column is hybrid with "
        f"`--type pdf --tag rules`.\n\n"
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


def _cold(bucket: Path, queries: list[str], runs: int) -> str:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    command = [str(BIN / "bucketdigest"), "search", "--bucket", str(bucket), "--limit", "10"]
    subprocess.run([*command, "warm the page cache"], check=True, capture_output=True, env=env)
    samples = []
    for query in queries[:runs]:
        started = time.perf_counter()
        subprocess.run([*command, query], check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - started)
    return (
        f"Cold `bucketdigest search` (a new process each time: interpreter, imports, model "
        f"and index opened, hybrid query, 10 hits printed), {bucket.name.split('-')[1]} chunks: "
        f"median {statistics.median(samples):.2f} s, best {min(samples):.2f} s over "
        f"{len(samples)} runs.\n"
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
