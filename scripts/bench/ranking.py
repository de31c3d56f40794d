"""Ranking on real documents: known-item queries drawn from the index of the real-world corpus
(``corpus.py``), answered by each search mode.

Query sets, all seeded and drawn from the chunks table itself:

- ``exact``: a 6-10 word span of a sentence of a chunk, as a person pastes it;
- ``loose``: the same span with every other word dropped, as a person half remembers it;
- ``heading``: a section's heading (3 or more words), whose chunks are the answer: a topic
  asked in the document's own words, where meaning matters more than exact wording;
- ``CJK``: 6-10 characters pasted from a Chinese, Japanese or Korean chunk.

A hit counts when it is a chunk that holds the span (any chunk holding it verbatim, so text
that repeats across documents is not held against a mode) or, for headings, a chunk under that
heading in that document. Reported: recall at 1 and 10 and the mean reciprocal rank.

The bucket is made once by ``bucketdigest run`` over the corpus and cached
(``~/.cache/bucketdigest/ranking``); the index is rebuilt from it on every run, with the code
being measured, and the rebuild is timed (chunks per second on real documents).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common import CLI, table
from corpus import fetch

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import CJK_RUN
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bucketdigest/ranking"
PER_SET = 200
_SENTENCE = re.compile(r"[^.!?\n]{40,}[.!?]")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass(frozen=True)
class Query:
    text: str
    relevant: Callable[[str, dict], bool]
    """Whether a hit (its chunk id and row) answers the query."""


def _bucket(quick: bool) -> Path:
    """A bucket holding the corpus, digested with default options (made once, kept)."""
    root = CACHE / ("quick" if quick else "corpus")
    bucket = root / "bucket"
    if (root / "done").is_file():
        return bucket
    shutil.rmtree(root, ignore_errors=True)
    inbox = root / "in"
    if quick:
        for i in range(6):
            make_pdf(inbox / f"gen-{i}.pdf", title=f"Generated {i}", pages=4, seed=i)
    else:
        for number, (path, category) in enumerate(fetch()):
            copy = inbox / re.sub(r"\W+", "-", category) / f"{number:03d}-{path.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    ran = subprocess.run(
        [*CLI, "run", str(inbox), "--bucket", str(bucket), "--workers", "2"],
        capture_output=True,
        text=True,
    )
    if ran.returncode not in (0, 1):  # 1: some corpus files fail, as they should (encrypted)
        raise RuntimeError(f"bucketdigest run failed ({ran.returncode}): {ran.stderr[-2000:]}")
    (root / "done").write_text("")
    return bucket


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _holds(span: str) -> Callable[[str, dict], bool]:
    wanted = _squeezed(span)
    return lambda _id, row: wanted in _squeezed(row["text"])


def _cjk_holds(span: str) -> Callable[[str, dict], bool]:
    wanted = re.sub(r"\s+", "", span)
    return lambda _id, row: wanted in re.sub(r"\s+", "", row["text"])


def _section(row: dict) -> tuple[str, str]:
    return row["digest"], (row["headings"] or [""])[-1].strip("#* ")


def query_sets(rows: list[dict], rng: random.Random) -> dict[str, list[Query]]:
    """The four sets, ``PER_SET`` queries each at most."""
    sets: dict[str, list[Query]] = {"exact": [], "loose": [], "heading": [], "CJK": []}
    order = list(range(len(rows)))
    rng.shuffle(order)
    headings_seen: set[tuple[str, str]] = set()
    for i in order:
        row = rows[i]
        text = row["text"]
        cjk = "".join(CJK_RUN.findall(text))
        if len(cjk) >= 20 and len(sets["CJK"]) < PER_SET:
            runs = [m for m in CJK_RUN.finditer(text) if len(m.group()) >= 6]
            if runs:
                run = rng.choice(runs)
                size = min(len(run.group()), rng.randint(6, 10))
                start = run.start() + rng.randrange(len(run.group()) - size + 1)
                span = text[start : start + size]
                sets["CJK"].append(Query(span, _cjk_holds(span)))
            continue
        sentences = [s.group() for s in _SENTENCE.finditer(text)]
        sentences = [s for s in sentences if len(_WORDS.findall(s)) >= 10]
        if sentences and len(sets["exact"]) < PER_SET:
            words = rng.choice(sentences).split()
            size = rng.randint(6, 10)
            start = rng.randrange(max(1, len(words) - size))
            span = " ".join(words[start : start + size])
            sets["exact"].append(Query(span, _holds(span)))
            loose = " ".join(words[start : start + size : 2])
            sets["loose"].append(Query(loose, _holds(span)))
        key = _section(row)
        heading = key[1]
        if (
            len(_WORDS.findall(heading)) >= 3
            and key not in headings_seen
            and len(sets["heading"]) < PER_SET
        ):
            headings_seen.add(key)
            sets["heading"].append(Query(heading, lambda _id, hit, key=key: _section(hit) == key))
    return sets


def _scores(searcher: Searcher, queries: list[Query], mode: Mode) -> tuple[str, ...]:
    ranks, seconds = [], []
    for query in queries:
        started = time.perf_counter()
        hits = searcher.search(SearchRequest(query.text, mode=mode, limit=10))
        seconds.append(time.perf_counter() - started)
        rows = _rows(searcher, [hit.chunk_id or "" for hit in hits])
        rank = next(
            (n for n, h in enumerate(hits, 1) if query.relevant(h.chunk_id, rows[h.chunk_id])),
            None,
        )
        ranks.append(rank)
    count = len(queries)
    at1 = sum(r == 1 for r in ranks) / count
    at10 = sum(r is not None for r in ranks) / count
    mrr = sum(1 / r for r in ranks if r) / count
    return (f"{at1:.2f}", f"{at10:.2f}", f"{mrr:.2f}", f"{statistics.median(seconds) * 1000:.0f}")


def _rows(searcher: Searcher, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    found = searcher.chunks.to_table(
        columns=["id", "digest", "text", "headings"], filter=f"id IN ({quoted})"
    ).to_pylist()
    return {row["id"]: row for row in found}


def run(quick: bool) -> str:
    bucket = _bucket(quick)
    settings = StoreSettings(bucket=str(bucket))
    started = time.perf_counter()
    report = index_bucket(LocalStore(bucket), settings, rebuild=True)
    rebuild = time.perf_counter() - started
    searcher = Searcher.open(settings)
    rows = searcher.chunks.to_table(columns=["id", "digest", "text", "headings"]).to_pylist()
    sets = query_sets(rows, random.Random(20261126))
    lines = []
    for mode in (Mode.KEYWORD, Mode.SEMANTIC, Mode.HYBRID):
        cells: list[str] = [mode.value]
        for queries in sets.values():
            if queries:
                cells += [" / ".join(_scores(searcher, queries, mode)[:3])]
            else:
                cells += ["-"]
        cells += [_scores(searcher, sets["exact"][:50], mode)[3]]
        lines.append(cells)
    header = [
        "mode",
        *(f"{name} ({len(queries)}) R@1 / R@10 / MRR" for name, queries in sets.items()),
        "p50 ms (exact)",
    ]
    documents = searcher.documents.count_rows()
    return (
        f"{len(rows):,} chunks of {documents} documents of the real-world corpus; "
        f"`index --rebuild` took {rebuild:.1f} s ({report.chunks / rebuild:,.0f} chunks/s "
        "with reading the result zips and building both indexes). "
        f"In-process `Searcher`, top 10.\n\n" + table(header, lines) + "\n"
    )


if __name__ == "__main__":
    print(run(quick=False))
