"""The benchmarks run (at tiny sizes); how fast is their business, not the suite's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_benchmarks_run_and_write_every_table(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    command = [
        sys.executable,
        str(ROOT / "scripts" / "bench" / "run.py"),
        "--quick",
        "--output",
        str(output),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=1200)
    text = output.read_text()
    for heading in (
        "Real-world PDFs",
        "Fidelity",
        "Throughput",
        "Store requests per document",
        "Claim cost",
        "Concurrent claimers",
        "Ingest hashing",
        "Search",
        "Ranking",
        "Questions in a person's own words",
        "Embeddings",
        "Memory per document",
        "doc-to-markdown against bare pymupdf4llm",
        "OCR readers",
        "Search from a bucket",
        "Damage: one damaged object costs only itself",
        "Serving",
        "A million documents",
        "Revisions",
        "Speech",
        "Before and after",
        "Workers without credentials: the broker",
        "Events under a failing receiver",
        "document.json: regions on real pages, and its cost",
        "Drop-in conversion APIs: overhead over a plain run",
    ):
        assert f"## {heading}" in text
    assert "- machine: " in text and "| local |" in text
