"""Serving: API search latency over real HTTP, and a document page's time to first byte with
the result cache cold and warm (bucket on moto's S3 server)."""

from __future__ import annotations

import io
import json
import os
import random
import socket
import statistics
import subprocess
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
from common import CLI, moto_server, new_bucket, table
from load import searches_under_load
from questions import load as load_questions
from ranking import _bucket as corpus_bucket
from ranking import query_sets
from searching import _fill, _percentiles, _queries

from bucketdigest.search.query import Searcher
from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared import keys
from bucketdigest.shared.clock import utc_now
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.records import SourceRecord

DIGEST = "5e" * 32
ONCE_RUNS = 3
"""Runs of the real bucket's each-query-once load per process count, each on a new server:
on 2 cores shared with the load generator, runs of the same code read 136 to 206 searches/s."""


def _api_latency(settings: StoreSettings, queries: list[str]) -> list[tuple[str, ...]]:
    rows = []
    with (
        background_server(ServeSettings(store=settings, port=0)) as url,
        httpx.Client(timeout=60) as http,  # the first search loads the model
    ):
        for mode in ("keyword", "semantic", "hybrid"):
            route = f"{url}/api/search/chunks"
            for query in queries[:3]:  # warm: model loaded, tables opened
                http.get(route, params={"q": query, "mode": mode}).raise_for_status()
            samples = []
            for query in queries:
                started = time.perf_counter()
                http.get(route, params={"q": query, "mode": mode}).raise_for_status()
                samples.append((time.perf_counter() - started) * 1000)
            rows.append((mode, *_percentiles(samples).split(" / ")))
    return rows


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _under_load(
    bucket: str,
    processes: int,
    queries: list[str],
    clients: int,
    seconds: float,
    *,
    warm: list[str] | None = None,
    shared: bool = True,
) -> tuple[str, ...]:
    """``bucketdigest serve --processes N``, ``clients`` connections searching for
    ``seconds`` (see :func:`load.searches_under_load` for ``shared``), after ``warm`` (by
    default the first 40 queries) was asked once; the server's log is shown if a search
    fails."""
    port = _free_port()
    command = [*CLI, "serve", "--bucket", bucket, "--port", str(port)]
    url = f"http://127.0.0.1:{port}/api/search/chunks"
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(
            [*command, "--processes", str(processes)], stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            while True:
                try:
                    httpx.get(url, params={"q": "warm"}, timeout=60).raise_for_status()
                    break
                except httpx.TransportError:
                    time.sleep(0.3)
            # every process warm: model loaded (one client: each of its own costs a TLS setup)
            with ThreadPoolExecutor(clients) as pool, httpx.Client(timeout=60) as http:
                first = queries[:40] if warm is None else warm
                list(pool.map(lambda q: http.get(url, params={"q": q}), first))
            samples, elapsed = searches_under_load(
                "127.0.0.1", port, "/api/search/chunks", queries, clients, seconds, shared=shared
            )
        except RuntimeError:
            log.seek(0)
            print(log.read().decode(errors="replace")[-5000:])
            raise
        finally:
            server.terminate()
            server.wait(timeout=30)
    return (
        str(processes),
        str(clients),
        f"{len(samples):,}",
        f"{len(samples) / elapsed:.0f}",
        *_percentiles(samples).split(" / "),
    )


def _distinct_queries(bucket: Path, questions: list[str]) -> list[str]:
    """The hand-written questions and the ranking bench's known-item queries (spans pasted
    from the bucket's passages, half remembered, headings, CJK), each once, shuffled."""
    searcher = Searcher.open(StoreSettings(bucket=str(bucket)))
    rows = searcher.chunks.to_table(columns=["id", "digest", "text", "headings"]).to_pylist()
    drawn = [q.text for queries in query_sets(rows, random.Random(7)).values() for q in queries]
    distinct = list(dict.fromkeys(" ".join(q.split()) for q in (*questions, *drawn)))
    random.Random(7).shuffle(distinct)
    return distinct


def _result_zip(pages: int, rng: np.random.Generator) -> bytes:
    """A result zip shaped like a real one: a page of Markdown and an image per page."""
    words = ["grapple", "cannon", "spell", "harvest", "dungeon", "initiative", "round", "turn"]
    members = {
        "info.json": json.dumps({"names": ["books/big.pdf"], "metadata": {"title": "Big Book"}}),
        "tags.json": json.dumps([{"keyword": w, "score": 0.1} for w in words[:5]]),
        "summary.md": "A long book about " + ", ".join(words) + ".",
    }
    for n in range(1, pages + 1):
        text = " ".join(rng.choice(words, size=300))
        members[f"pages/{n:04d}.md"] = f"# Page {n}\n\n{text}\n\n![](images/p{n}.png)\n"
        members[f"images/p{n}.png"] = rng.bytes(20_000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _ttfb(http: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    with http.stream("GET", url) as answer:
        answer.raise_for_status()
        next(answer.iter_raw())
        return (time.perf_counter() - started) * 1000


def _page_times(settings: StoreSettings, runs: int) -> tuple[list[float], list[float]]:
    """(cold: a new server and empty cache each time, warm: the same server again)."""
    cold, warm = [], []
    for _ in range(runs):
        with (
            background_server(ServeSettings(store=settings, port=0)) as url,
            httpx.Client() as http,
        ):
            page = f"{url}/documents/{DIGEST}"
            cold.append(_ttfb(http, page))
            warm += [_ttfb(http, page) for _ in range(10)]
    return cold, warm


def run(quick: bool) -> str:
    rng = np.random.default_rng(3)
    size = 2_000 if quick else 100_000
    queries = _queries(10 if quick else 100, rng)
    load_queries = list(dict.fromkeys(_queries(20_000, rng)))  # never asked twice
    warm_up = [q for q in _queries(40, rng) if q not in load_queries]
    clients, seconds = (4, 1.0) if quick else (20, 20.0)
    counts = (1,) if quick else (1, os.cpu_count() or 1)  # server processes: a start is seconds
    with tempfile.TemporaryDirectory() as scratch:
        local = StoreSettings(bucket=str(Path(scratch) / "index"))
        _fill(local, size, rng)
        latency = _api_latency(local, queries)
        load = [
            _under_load(
                local.bucket, processes, load_queries, clients, seconds, warm=warm_up, shared=False
            )
            for processes in counts
        ]
    real = corpus_bucket(quick)
    questions = [q.text for q in load_questions()]
    distinct = _distinct_queries(real, questions)
    # a server that has run a while has read each document's places once (per version of
    # its result): warmed with queries of the same kinds, never asked again
    warming, asked = distinct[: len(distinct) * 2 // 5], distinct[len(distinct) * 2 // 5 :]
    runs = 1 if quick else ONCE_RUNS
    real_load = [
        (
            "questions in turn",
            *_under_load(str(real), processes, questions, clients, seconds),
        )
        for processes in counts
    ] + [
        (
            f"each query once, run {run} of {runs}" if runs > 1 else "each query once",
            *_under_load(
                str(real), processes, asked, clients, seconds / 2, warm=warming, shared=False
            ),
        )
        for processes in counts
        for run in range(1, runs + 1)
    ]
    pages = 20 if quick else 300
    data = _result_zip(pages, rng)
    with moto_server() as endpoint:
        settings = StoreSettings(bucket=f"s3://{new_bucket(endpoint)}/bench", endpoint_url=endpoint)
        store = open_store(settings, self_test=False)
        store.put(keys.out_key(DIGEST), data)
        origin = SourceRecord(DIGEST, "bench", "books/big.pdf", len(data), utc_now())
        store.put(keys.registry_doc_key(DIGEST, DIGEST[:32]), origin.to_json())
        cold, warm = _page_times(settings, 3 if quick else 5)
    return (
        f"`GET /api/search/chunks` over HTTP (uvicorn in the benchmark's process, one keep-alive "
        f"client, 10 hits, snippets included) on a {size:,}-chunk index on the local store, "
        f"{len(queries)} queries of 2-4 words per mode after 3 to warm up; ms:\n\n"
        + table(("mode", "p50", "p95"), latency)
        + f"\n\n`bucketdigest serve --processes N` on the same index, {clients} clients "
        f"(keep-alive connections of one asyncio loop in the benchmark's process, on the same "
        f"cores: `load.py`) searching for {seconds:.0f} s, hybrid, "
        f"{len(load_queries):,} distinct queries of 2-4 words shared out among the clients, "
        f"each asked once (none answered from what the server kept), 10 hits with snippets; "
        f"latency in ms:\n\n"
        + table(("processes", "clients", "searches", "searches/s", "p50", "p95"), load)
        + f"\n\nThe same on a bucket of real documents (the ranking bench's: the real-world "
        f"corpus digested with default options); each hit with its answering blocks' regions "
        f"(read from the result's `document.json` once per version, then kept) and its page "
        f"view link. Two loads: its {len(questions)} hand-written questions in turn, every "
        f"client one step behind the one before (the same questions asked again and again, "
        f"as by people searching for the same things: a server answers a request asked again "
        f"for the same index version with the hits it gave); and each query once, for "
        f"{seconds / 2:.0f} s: the clients share out {len(asked):,} distinct queries (the "
        f"questions and the ranking bench's known-item queries), so no search is answered "
        f"from what the server kept (a client whose share is done stops); the server warmed "
        f"first with {len(warming):,} other queries of the same kinds, as a server that has "
        f"run a while has read each document's places once; "
        + (
            f"{runs} runs of it, each on a new server, as one run's rate varies by a fifth or more"
            if runs > 1
            else "one run"
        )
        + ":\n\n"
        + table(("load", "processes", "clients", "searches", "searches/s", "p50", "p95"), real_load)
        + f"\n\nDocument page (`GET /documents/<hash>`, the first 20 pages rendered) of a "
        f"{pages}-page result zip of {len(data) / 2**20:.1f} MiB on moto's S3 server, time to "
        f"first byte in ms. Cold: a new server with an empty cache (the zip is downloaded); "
        f"warm: the same page again (the zip is read from the disk cache, one HEAD every 30 s "
        f"at most):\n\n"
        + table(
            ("cache", "requests", "median", "best"),
            [
                ("cold", len(cold), f"{statistics.median(cold):.0f}", f"{min(cold):.0f}"),
                ("warm", len(warm), f"{statistics.median(warm):.0f}", f"{min(warm):.0f}"),
            ],
        )
        + "\n"
    )
