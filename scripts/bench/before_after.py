"""The same corpus through two checkouts of bucketdigest, one after the other on this machine:
``bucketdigest run --workers 2`` with default options, per category doc-to-markdown's pages/s
per worker and the word recall of the result (``document.md`` and the running lines
``pages.json`` keeps) against poppler's ``pdftotext``, each digester's seconds over the run,
and search-semantic's time per vector it made (a chunk's before window vectors, a window's
since). It answers "did this change make the Markdown lose words, or the converter or another
step slower", measured in one run.

``--before PYTHON`` names the Python of the other checkout (a virtual environment where that
checkout is installed, e.g. made with ``git worktree`` and ``pip install -e``); this checkout is
``sys.executable``. ``--quick`` runs this checkout against itself on generated PDFs.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from common import table
from realworld import (
    TEXT_MIN_WORDS,
    corpus_files,
    digester_seconds,
    markdown_time,
    poppler,
    running_lines,
)

from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.shared import keys
from bucketdigest.shared.pagetext import word_counts, word_recall


def _run(python: str, inbox: Path, bucket: Path) -> float:
    started = time.perf_counter()
    command = [python, "-m", "bucketdigest", "run", str(inbox), "--bucket", str(bucket)]
    done = subprocess.run([*command, "--workers", "2"], capture_output=True, check=False)
    if not any((bucket / keys.OUT_PREFIX).glob("*.zip")):
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{python} put no result in {bucket} (exit {done.returncode}):\n{tail}")
    return time.perf_counter() - started


def _vectors(archive: zipfile.ZipFile) -> int:
    """How many vectors search-semantic made for a result: a window's each where the result
    keeps its windows (``windows.npy``), else a chunk's each (``embeddings.npy``)."""
    names = set(archive.namelist())
    for name in ("windows.npy", "embeddings.npy"):
        if name in names:
            return int(np.load(io.BytesIO(archive.read(name)), allow_pickle=False).shape[0])
    return 0


def _per_category(
    bucket: Path, placed: list[tuple[Path, str, str]]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, float], int]:
    """Per category (and ``all``): doc-to-markdown seconds and pages, each text PDF's recall,
    and the files not out; each digester's seconds over all documents; and the vectors
    search-semantic made for them."""
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    spent: dict[str, float] = defaultdict(float)
    vectors = 0
    for copy, category, digest in placed:
        rows = (found[category], found["all"])
        out = bucket / keys.out_key(digest)
        if not out.is_file():
            for row in rows:
                row["missing"].append(1)
            continue
        with zipfile.ZipFile(io.BytesIO(out.read_bytes())) as archive:
            seconds, pages = markdown_time(archive)
            for digester, took in digester_seconds(archive).items():
                spent[digester] += took
            vectors += _vectors(archive)
            markdown = archive.read("document.md").decode() + running_lines(archive)
        reference = word_counts(poppler("pdftotext", copy) or "")
        for row in rows:
            row["seconds"].append(seconds)
            row["pages"].append(pages)
            if sum(reference.values()) >= TEXT_MIN_WORDS:
                row["recall"].append(word_recall(markdown, reference))
    return found, spent, vectors


def _rate(row: dict[str, list[float]]) -> float | None:
    seconds = sum(row["seconds"])
    return sum(row["pages"]) / seconds if seconds else None


def _recall(row: dict[str, list[float]]) -> str:
    recall = row["recall"]
    return f"{sum(recall) / len(recall):.3f} ({len(recall)})" if recall else "-"


def run(quick: bool, before: str | None) -> str:
    import sys

    if before is None and not quick:
        return "Not run: give `--before PYTHON` (the Python of the checkout to compare with)."
    checkouts = {"before": before or sys.executable, "now": sys.executable}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        placed: list[tuple[Path, str, str]] = []
        for number, (path, category) in enumerate(corpus_files(quick, root / "gen")):
            copy = root / "in" / re.sub(r"\W+", "-", category) / f"{number:03d}-{path.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            placed.append((copy, category, sha256_file(copy)[0]))
        results, seconds, spent, vectors = {}, {}, {}, {}
        for name, python in checkouts.items():
            bucket = root / f"bucket-{name}"
            seconds[name] = _run(python, root / "in", bucket)
            results[name], spent[name], vectors[name] = _per_category(bucket, placed)
    rows = []
    categories = [*sorted((set(results["before"]) | set(results["now"])) - {"all"}), "all"]
    for category in categories:
        before_row, now_row = results["before"][category], results["now"][category]
        rates = _rate(before_row), _rate(now_row)
        rows.append(
            [
                category,
                int(sum(now_row["pages"])),
                f"{rates[0]:.2f}" if rates[0] else "-",
                f"{rates[1]:.2f}" if rates[1] else "-",
                f"{rates[1] / rates[0]:.2f}x" if rates[0] and rates[1] else "-",
                _recall(before_row),
                _recall(now_row),
                f"{len(before_row['missing'])} / {len(now_row['missing'])}",
            ]
        )
    return (
        f"Both checkouts one after the other on the same {len(placed)} files, "
        f"`bucketdigest run --workers 2` with default options: {seconds['before']:.0f} s before, "
        f"{seconds['now']:.0f} s now. doc-to-markdown pages/s per worker: a category's pages "
        "over the time its doc-to-markdown outputs took; recall of `document.md` with the "
        "running lines kept in `pages.json` against `pdftotext` (text PDFs, their count in "
        "brackets).\n\n"
        + table(
            [
                "category",
                "pages",
                "doc-to-markdown pages/s before",
                "now",
                "now / before",
                "recall before",
                "recall now",
                "not out before / now",
            ],
            rows,
        )
        + "\n\nEach digester's outputs over the run (seconds in the workers, summed over the "
        "documents; share of the run's digester time):\n\n"
        + table(
            ["digester", "seconds before", "share", "seconds now", "share", "speed now / before"],
            _digester_rows(spent["before"], spent["now"]),
        )
        + "\n\n"
        + _per_vector(spent, vectors)
    )


def _per_vector(spent: dict[str, dict[str, float]], vectors: dict[str, int]) -> str:
    """search-semantic's time per vector it made, before and now (a vector a chunk before
    windows, a vector a window since)."""
    took = {name: spent[name].get("search-semantic", 0.0) for name in spent}
    if not all(vectors.values()) or not all(took.values()):
        return "search-semantic made no vectors on one side."
    each = {name: 1000 * took[name] / vectors[name] for name in took}
    return (
        f"search-semantic per vector it made: {each['before']:.1f} ms before "
        f"({vectors['before']:,.0f} vectors in {took['before']:.0f} s), {each['now']:.1f} ms "
        f"now ({vectors['now']:,.0f} in {took['now']:.0f} s): "
        f"{each['before'] / each['now']:.2f}x per vector."
    )


def _digester_rows(before: dict[str, float], now: dict[str, float]) -> list[list[str]]:
    """A row a digester, the costliest now first, then the whole chain."""
    totals = sum(before.values()) or 1.0, sum(now.values()) or 1.0
    rows = []
    for digester in sorted(set(before) | set(now), key=lambda d: -now.get(d, 0.0)):
        was, is_ = before.get(digester, 0.0), now.get(digester, 0.0)
        rows.append(
            [
                digester,
                f"{was:.0f}",
                f"{was / totals[0]:.0%}",
                f"{is_:.0f}",
                f"{is_ / totals[1]:.0%}",
                f"{was / is_:.2f}x" if was and is_ else "-",
            ]
        )
    rows.append(
        [
            "all",
            f"{totals[0]:.0f}",
            "100%",
            f"{totals[1]:.0f}",
            "100%",
            f"{totals[0] / totals[1]:.2f}x",
        ]
    )
    return rows
