"""Run the benchmarks and write their tables to docs/benchmarks.md (see README.md here).

With ``--only``, the sections not run are kept from the existing file, each with the line
saying when and how it was measured."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import before_after
import claims
import conversion_api
import damage
import embeddings
import fidelity
import fleet
import hashing
import index_cache
import memory
import ocr_readers
import plain_pages
import questions
import ranking
import realworld
import requests_per_doc
import revisions
import scale
import searching
import serving
import speech
import steps
import structure
import throughput
from common import ROOT, machine

SECTIONS = (
    "realworld",
    "fidelity",
    "throughput",
    "plain-pages",
    "steps",
    "ocr",
    "requests",
    "memory",
    "claims",
    "hashing",
    "search",
    "ranking",
    "questions",
    "embeddings",
    "index-cache",
    "serve",
    "scale",
    "revisions",
    "speech",
    "before-after",
    "damage",
    "fleet",
    "structure",
    "conversion-api",
)
ANALYSIS_MARKER = "<!-- analysis: written by hand, kept when the tables are regenerated -->"


def _sections(text: str) -> dict[str, str]:
    """The ``## `` sections of a results file (before the analysis), by heading."""
    tables = text.split(ANALYSIS_MARKER, 1)[0]
    found = {}
    for block in re.split(r"(?m)^(?=## )", tables)[1:]:
        heading = block.splitlines()[0]
        found[heading] = block.rstrip() + "\n"
    return found


def _measured(args: argparse.Namespace, wanted: list[str]) -> dict[str, str]:
    stamp = (
        f"_Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by "
        f"`{shlex.join(['python', 'scripts/bench/run.py', *sys.argv[1:]])}`._\n"
    )
    out: dict[str, str] = {}
    since = time.perf_counter()

    def add(heading: str, body: str) -> None:
        """Keep a section's table, and say on stderr how long it took to measure."""
        nonlocal since
        out[f"## {heading}"] = f"## {heading}\n\n{stamp}\n{body.rstrip()}\n"
        print(f"{time.perf_counter() - since:6.0f} s  {heading}", file=sys.stderr, flush=True)
        since = time.perf_counter()

    if "realworld" in wanted:
        add(
            "Real-world PDFs: outcomes, recall and the chain against the converter",
            realworld.run(args.quick),
        )
    if "fidelity" in wanted:
        add("Fidelity: facts read off real pages", fidelity.run(args.quick, args.before))
    if "throughput" in wanted:
        runs = 1 if args.quick else args.repeat
        add(
            "Throughput: the converter alone against bucketdigest",
            throughput.run(args.quick, args.mode, runs),
        )
    if "requests" in wanted:
        add("Store requests per document", requests_per_doc.run(args.quick))
    if "claims" in wanted:
        add("Claim cost against queue length", claims.scale(args.quick))
        add("Concurrent claimers on moto's server", claims.contention(args.quick))
    if "plain-pages" in wanted:
        add(
            "doc-to-markdown against bare pymupdf4llm, and plain pages", plain_pages.run(args.quick)
        )
    if "steps" in wanted:
        add("doc-to-markdown step by step: where its time goes", steps.run(args.quick))
    if "ocr" in wanted:
        add("OCR readers: Tesseract and PP-OCR on the scanned pages", ocr_readers.run(args.quick))
    if "memory" in wanted:
        add("Memory per document: a worker's process tree", memory.run(args.quick))
    if "hashing" in wanted:
        add("Ingest hashing", hashing.run(args.quick))
    if "search" in wanted:
        add("Search", searching.run(args.quick))
    if "ranking" in wanted:
        add("Ranking: known-item queries over the real-world corpus", ranking.run(args.quick))
    if "questions" in wanted:
        add("Questions in a person's own words", questions.run(args.quick))
    if "embeddings" in wanted:
        add("Embeddings: float against 8-bit weights", embeddings.run(args.quick))
    if "index-cache" in wanted:
        add("Search from a bucket: the local index copy", index_cache.run(args.quick))
    if "serve" in wanted:
        add("Serving: the HTTP API and the web pages", serving.run(args.quick))
    if "revisions" in wanted:
        add("Revisions: a new revision against from scratch", revisions.run(args.quick))
    if "speech" in wanted:
        add("Speech: word error rate of the offline recogniser", speech.run(args.quick))
    if "before-after" in wanted:
        add(
            "Before and after: doc-to-markdown speed and recall, two checkouts",
            before_after.run(args.quick, args.before),
        )
    if "scale" in wanted:
        add("A million documents: status, ls and the consistency sweep", scale.run(args.quick))
    if "fleet" in wanted:
        add("Workers without credentials: the broker", fleet.broker_run(args.quick))
        add("Events under a failing receiver", fleet.events_run(args.quick))
    if "structure" in wanted:
        regions, reading = structure.run(args.quick)
        add("document.json: regions on real pages, and its cost", regions)
        add("Tags and snippets on real documents", reading)
    if "conversion-api" in wanted:
        add(
            "Drop-in conversion APIs: overhead over a plain run",
            conversion_api.run(args.quick),
        )
    if "damage" in wanted:
        add("Damage: one damaged object costs only itself", damage.run(args.quick))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the benches run")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument(
        "--mode", default="legacy", choices=("legacy", "layout"), help="converter mode"
    )
    parser.add_argument("--repeat", type=int, default=2, help="throughput runs per configuration")
    parser.add_argument(
        "--before", default=None, help="before-after, fidelity: the other checkout's Python"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    existing = args.output.read_text() if args.output.exists() else ""
    sections = _sections(existing)
    sections.update(_measured(args, args.only.split(",")))
    analysis = existing.split(ANALYSIS_MARKER, 1)[1] if ANALYSIS_MARKER in existing else "\n"
    header = [
        "# Benchmarks",
        "",
        f"- machine: {machine()}",
        f"- last run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{time.perf_counter() - started:.0f} s",
        "",
    ]
    body = "\n".join(header) + "\n" + "\n".join(sections.values())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(body + "\n" + ANALYSIS_MARKER + analysis)
    print(args.output.read_text())


if __name__ == "__main__":
    main()
