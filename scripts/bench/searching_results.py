"""Search benchmarks over result zips: indexing throughput (rebuild and incremental, local
and moto) and known-item retrieval quality per mode."""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from common import moto_server, new_bucket, table
from searching_data import (
    put_result,
    quality_queries,
    texts,
    topic_documents,
    unit_vectors,
    vocabulary,
)

from bucketdigest.search.indexer import IndexReport, index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Level, Mode, SearchRequest
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.embedding import shared_embedder
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore


def _digest(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def _add(store: Store, count: int, tag: str, rng: np.random.Generator, chunks: int) -> None:
    """``count`` result zips of ``chunks`` synthetic chunks each, named after ``tag``."""
    words, p = vocabulary()
    for n in range(count):
        passages = texts(chunks, words, p, rng)
        put_result(
            store,
            _digest(f"{tag}-{n}"),
            f"{tag}/{n}.pdf",
            passages,
            unit_vectors(chunks, rng),
            title=f"Book {n}",
            summary=passages[0],
        )


def _timed(label: str, documents: int, run: Callable[[], IndexReport]) -> tuple[str, ...]:
    """A table row for one indexing run over ``documents`` documents."""
    started = time.perf_counter()
    report = run()
    seconds = time.perf_counter() - started
    return (
        label,
        f"{report.chunks:,}",
        f"{seconds:.1f}",
        f"{report.chunks / seconds:,.0f}",
        f"{documents / seconds:,.0f}",
    )


def indexing(quick: bool) -> str:
    documents = 40 if quick else 2_000
    increments = [20] if quick else [100, 250, 500]
    chunks = 50
    rng = np.random.default_rng(2)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        store = LocalStore(Path(scratch) / "bucket")
        settings = StoreSettings(bucket=str(store.root))
        _add(store, documents, "base", rng, chunks)
        label = f"rebuild, local store, {documents:,} documents"
        rows.append(_timed(label, documents, lambda: index_bucket(store, settings, rebuild=True)))
        for count in increments:
            _add(store, count, f"more-{count}", rng, chunks)
            documents += count
            label = f"incremental, local store, {count} new of {documents:,}"
            rows.append(_timed(label, count, lambda: index_bucket(store, settings)))
    with moto_server() as endpoint:
        settings = StoreSettings(bucket=f"s3://{new_bucket(endpoint)}/bench", endpoint_url=endpoint)
        remote = open_store(settings)
        base, more = (20, 10) if quick else (400, 200)
        _add(remote, base, "m", rng, chunks)
        index_bucket(remote, settings)
        _add(remote, more, "n", rng, chunks)
        label = f"incremental, moto server, {more} new of {base + more}"
        rows.append(_timed(label, more, lambda: index_bucket(remote, settings)))
    return (
        f"`index_bucket` on result zips as workers write them ({chunks} chunks each, "
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
