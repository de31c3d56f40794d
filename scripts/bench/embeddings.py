"""Embeddings: the float model against its 8-bit quantisation (``Embedder(precision=...)``),
on the chunks of the real-world corpus (the ranking bench's bucket and index).

Measured per variant, threads and batch size: chunks embedded per second; the cosine of each
chunk's vector to the float model's; and semantic retrieval over the corpus's chunks by exact
cosine (no index, so only the vectors differ), with the ranking bench's known-item sets
(exact spans, loose spans, section headings) and the paraphrase set of the search bench, the
chunks and queries both embedded by the variant."""

from __future__ import annotations

import multiprocessing
import random
import resource
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import psutil
from common import table
from ranking import Query, _bucket, query_sets
from searching_data import quality_queries, topic_documents

from bucketdigest.search.query import Searcher
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.embedding import Embedder

SPEED_SAMPLE = 400
BUDGETS = (256, 1024, 4096)


def _recall(
    embedder: Embedder,
    rows: list[dict],
    vectors: np.ndarray,
    queries: list[Query],
) -> str:
    if not queries:
        return "-"
    asked = embedder.encode([q.text for q in queries])
    ranks = []
    for query, vector in zip(queries, asked, strict=True):
        best = np.argsort(-(vectors @ vector))[:10]
        ranks.append(
            next((n for n, i in enumerate(best, 1) if query.relevant(rows[i]["id"], rows[i])), None)
        )
    at1 = sum(r == 1 for r in ranks) / len(ranks)
    at10 = sum(r is not None for r in ranks) / len(ranks)
    return f"{at1:.2f} / {at10:.2f}"


def _paraphrases(embedder: Embedder) -> str:
    """The search bench's topics: a query in other words than the document's finds it."""
    names, passages = [], []
    for name, (_, texts) in topic_documents().items():
        names += [name] * len(texts)
        passages += texts
    vectors = embedder.encode(passages)
    found = 0
    asked = [(q, topic) for q, kind, topic in quality_queries() if kind == "meaning"]
    for vector, (_, topic) in zip(embedder.encode([q for q, _ in asked]), asked, strict=True):
        found += names[int(np.argmax(vectors @ vector))] == topic
    return f"{found}/{len(asked)}"


def _speed(precision: str, threads: int, budget: int, texts: list[str]) -> tuple[float, int]:
    """Chunks per second, and how far the process's resident memory rose above the loaded
    model's while embedding them (MiB), in a process of its own (the high-water mark of
    resident memory only rises)."""
    embedder = Embedder(threads=threads, precision=precision)
    embedder.encode(texts[:1])  # warm
    loaded = psutil.Process().memory_info().rss // 1024  # what ru_maxrss counts in: KiB
    started = time.perf_counter()
    embedder.encode(texts, batch_tokens=budget)
    rate = len(texts) / (time.perf_counter() - started)
    return rate, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - loaded) // 1024


def run(quick: bool) -> str:
    bucket = _bucket(quick)
    searcher = Searcher.open(StoreSettings(bucket=str(bucket)))
    rows = searcher.chunks.to_table(columns=["id", "digest", "text", "headings"]).to_pylist()
    texts = [row["text"] for row in rows]
    sets = query_sets(rows, random.Random(20261126))
    sample = random.Random(7).sample(texts, min(len(texts), 60 if quick else SPEED_SAMPLE))
    reference = Embedder(threads=2, precision="float32").encode(texts)
    speed_rows, quality_rows = [], []
    for precision in ("float32", "int8"):
        for threads in (1,) if quick else (1, 2):  # quick: each path once (a process a row)
            embedder = Embedder(threads=threads, precision=precision)
            for budget in BUDGETS[:1] if quick else BUDGETS:
                spawn = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(1, mp_context=spawn) as child:
                    run = child.submit(_speed, precision, threads, budget, sample)
                    rate, grown = run.result()
                speed_rows.append(
                    (precision, str(threads), f"{budget:,}", f"{rate:.1f}", f"{grown:,}")
                )
        vectors = reference if precision == "float32" else embedder.encode(texts)
        cosine = (vectors * reference).sum(axis=1)
        quality_rows.append(
            (
                precision,
                f"{cosine.mean():.4f} / {np.percentile(cosine, 5):.4f} / {cosine.min():.4f}",
                *(
                    _recall(embedder, rows, vectors, sets[name])
                    for name in ("exact", "loose", "heading")
                ),
                _paraphrases(embedder),
            )
        )
    return (
        f"all-MiniLM-L6-v2 on {len(sample)} chunks of the real-world corpus (up to 256 tokens "
        "each); chunks per second and what the process grew by, one process per row; texts "
        "of like length share a run up to its tokens (the default, 256: a long chunk alone):"
        "\n\n"
        + table(
            ("precision", "threads", "tokens a run", "chunks/s", "memory while embedding, MiB"),
            speed_rows,
        )
        + f"\n\nVectors of all {len(texts):,} chunks against the float model's, and semantic "
        "retrieval by exact cosine over them (R@1 / R@10; paraphrases: the topic's passage "
        "first):\n\n"
        + table(
            (
                "precision",
                "cosine to float: mean / p5 / min",
                f"exact ({len(sets['exact'])})",
                f"loose ({len(sets['loose'])})",
                f"heading ({len(sets['heading'])})",
                "paraphrases",
            ),
            quality_rows,
        )
        + "\n"
    )
