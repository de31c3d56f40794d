"""Run the benchmarks and write their tables to docs/benchmarks.md (see README.md here)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import claims
import hashing
import requests_per_doc
import throughput
from common import ROOT, machine

SECTIONS = ("throughput", "requests", "claims", "hashing")
ANALYSIS_MARKER = "<!-- analysis: written by hand, kept when the tables are regenerated -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the benches run")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument(
        "--mode", default="legacy", choices=("legacy", "layout"), help="converter mode"
    )
    parser.add_argument("--repeat", type=int, default=2, help="throughput runs per configuration")
    args = parser.parse_args()
    wanted = args.only.split(",")
    started = time.perf_counter()
    parts = [
        "# Benchmarks",
        "",
        f"- machine: {machine()}",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- command: `{shlex.join(['python', 'scripts/bench/run.py', *sys.argv[1:]])}`",
        "",
    ]
    if "throughput" in wanted:
        parts += [
            "## Throughput: the converter alone against bucketdigest",
            "",
            throughput.run(args.quick, args.mode, 1 if args.quick else args.repeat),
            "",
        ]
    if "requests" in wanted:
        parts += ["## Store requests per document", "", requests_per_doc.run(args.quick), ""]
    if "claims" in wanted:
        parts += ["## Claim cost against queue length", "", claims.scale(args.quick), ""]
        parts += ["## Concurrent claimers on moto's server", "", claims.contention(args.quick), ""]
    if "hashing" in wanted:
        parts += ["## Ingest hashing", "", hashing.run(args.quick), ""]
    parts.append(f"_Total bench time {time.perf_counter() - started:.0f} s._")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    kept = ""
    if args.output.exists() and ANALYSIS_MARKER in args.output.read_text():
        kept = args.output.read_text().split(ANALYSIS_MARKER, 1)[1]
    args.output.write_text("\n".join(parts) + "\n\n" + ANALYSIS_MARKER + (kept or "\n"))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
