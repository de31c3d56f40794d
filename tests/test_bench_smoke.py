"""The benchmarks run (at tiny sizes); how fast is their business, not the suite's. They run
in groups of sections, one process each, so a parallel suite spreads them over its workers."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "scripts" / "bench" / "run.py"

GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "conversion": {
        "realworld": ("Real-world PDFs",),
        "throughput": ("Throughput",),
        "requests": ("Store requests per document",),
        "claims": ("Claim cost", "Concurrent claimers"),
        "hashing": ("Ingest hashing",),
        "plain-pages": ("doc-to-markdown against bare pymupdf4llm",),
        "steps": ("doc-to-markdown step by step",),
        "ocr": ("OCR readers",),
    },
    "search": {
        "memory": ("Memory per document",),
        "search": ("Search",),
        "ranking": ("Ranking",),
        "questions": ("Questions in a person's own words",),
        "embeddings": ("Embeddings",),
        "index-cache": ("Search from a bucket",),
        "serve": ("Serving",),
        "scale": ("A million documents",),
    },
    "fleet": {
        "fidelity": ("Fidelity",),
        "revisions": ("Revisions",),
        "speech": ("Speech",),
        "before-after": ("Before and after",),
        "fleet": ("Workers without credentials: the broker", "Events under a failing receiver"),
        "structure": ("document.json: regions on real pages, and its cost",),
        "conversion-api": ("Drop-in conversion APIs: overhead over a plain run",),
        "damage": ("Damage: one damaged object costs only itself",),
    },
}


def _sections() -> tuple[str, ...]:
    """``run.py``'s SECTIONS, read without importing every benchmark."""
    for node in ast.parse(RUN.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SECTIONS":
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("run.py has no SECTIONS")


def test_the_groups_hold_every_benchmark_once() -> None:
    grouped = [section for group in GROUPS.values() for section in group]
    assert sorted(grouped) == sorted(_sections())


@pytest.mark.slow
@pytest.mark.parametrize("group", GROUPS)
def test_the_benchmarks_run_and_write_every_table(group: str, tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    sections = GROUPS[group]
    command = [sys.executable, str(RUN), "--quick", "--only", ",".join(sections)]
    command += ["--output", str(output)]
    subprocess.run(command, check=True, capture_output=True, timeout=900)
    text = output.read_text()
    for headings in sections.values():
        for heading in headings:
            assert f"## {heading}" in text, heading
    assert "- machine: " in text
