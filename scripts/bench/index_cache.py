"""Searching an S3 bucket's index through the local copy (``--index-cache``) against reading
the bucket directly, on moto's server behind a proxy that adds 20 ms to every request."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import moto_server, new_bucket, table
from searching import _fill, _percentiles, _queries
from slow_proxy import slow_proxy

from bucketdigest.search.cache import IndexCache
from bucketdigest.search.index import SearchIndex, chunk_schema
from bucketdigest.search.location import index_location
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import SearchRequest
from bucketdigest.shared.config import StoreSettings, open_store

DELAY = 0.020
CHECK_SECONDS = 5.0


DIRECT_QUERIES = 5
"""Queries that read the bucket directly: each costs hundreds of ranged reads through the
proxy (seconds each at 100,000 chunks), so a few tell the story."""


def _warm(searcher: Searcher, queries: list[str]) -> list[float]:
    for query in queries[:2]:
        searcher.search(SearchRequest(query))
    samples = []
    for query in queries:
        started = time.perf_counter()
        searcher.search(SearchRequest(query))
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _one_more_row(settings: StoreSettings) -> None:
    """A commit of one row: a new version of the chunks table."""
    index = SearchIndex.open(index_location(settings))
    row = index.chunks.search().limit(1).to_arrow().select(chunk_schema().names).to_pylist()[0]
    row["id"] = "new-version-row"
    index.chunks.add(pa.Table.from_pylist([row], schema=chunk_schema()))


def run(quick: bool) -> str:
    size = 2_000 if quick else 100_000
    rng = np.random.default_rng(5)
    queries = _queries(10 if quick else 100, rng)
    rows = []
    with moto_server() as endpoint, tempfile.TemporaryDirectory() as scratch:
        bucket = f"s3://{new_bucket(endpoint)}/bench"
        _fill(StoreSettings(bucket=bucket, endpoint_url=endpoint), size, rng)
        local = StoreSettings(bucket=str(Path(scratch) / "local"))
        _fill(local, size, np.random.default_rng(5))
        local_samples = _warm(Searcher.open(local), queries)
        rows.append(("local store (no bucket)", "-", _percentiles(local_samples)))
        with slow_proxy(endpoint, DELAY) as proxy:
            remote = StoreSettings(bucket=bucket, endpoint_url=proxy)
            started = time.perf_counter()
            direct = Searcher.open(remote)
            direct.search(SearchRequest(queries[0]))
            cold_direct = time.perf_counter() - started
            direct_samples = _warm(direct, queries[:DIRECT_QUERIES])
            shown = _percentiles(direct_samples)
            direct_row = ("bucket read directly", f"{cold_direct:.1f}", shown)
            rows.append(direct_row)
            cache = IndexCache(
                open_store(remote), Path(scratch) / "copy", check_every=CHECK_SECONDS
            )
            started = time.perf_counter()
            cached = Searcher.open(remote, cache)
            cached.search(SearchRequest(queries[0]))
            cold_cached = time.perf_counter() - started
            cached_samples = _warm(cached, queries)
            rows.append(("local copy (cache)", f"{cold_cached:.1f}", _percentiles(cached_samples)))
            _one_more_row(StoreSettings(bucket=bucket, endpoint_url=endpoint))
            started = time.perf_counter()
            while Searcher.open(remote, cache).chunks.count_rows() == size:
                time.sleep(0.2)
            seen = time.perf_counter() - started
    ratio = statistics.median(cached_samples) / statistics.median(local_samples)
    return (
        f"Hybrid `Searcher.search`, {len(queries)} queries of 2-4 words, on a {size:,}-chunk "
        f"index in a bucket on moto's server behind a proxy adding {DELAY * 1000:.0f} ms to "
        f"every request; cold = opening the index and the first query (the copy: the whole "
        f"index downloaded first), warm p50 / p95 in ms (reading the bucket directly: "
        f"{DIRECT_QUERIES} queries only, seconds each):\n\n"
        + table(("index read from", "cold s", "warm p50 / p95 ms"), rows)
        + f"\n\nThrough the copy, warm p50 is {ratio:.2f}x the local store's. A new version "
        f"written to the bucket was seen by the copy {seen:.1f} s later (it checks at most every "
        f"{CHECK_SECONDS:.0f} s).\n"
    )


if __name__ == "__main__":
    print(run(quick=False))
