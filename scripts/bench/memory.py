"""Memory per document: peak resident memory of a worker's whole process tree (the
``bucketdigest run`` process, its worker and the digester child it starts, OCR engines
included) while each document of the real-world corpus (``corpus.py``) is being digested,
with default options and one worker, all documents in one run (so what a long-lived child
keeps from one document to the next counts).

The tree is sampled every ``SAMPLE_SECONDS``: the sum of its processes' resident set sizes
(shared pages counted in each process, so an upper bound). A document's peak is the highest
sample while its ``queue/processing/`` marker exists. ``--quick`` uses generated PDFs."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import psutil
from common import CLI, table
from corpus import fetch, page_count

from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.shared import keys
from bucketdigest.shared.samples import make_pdf

SAMPLE_SECONDS = 0.1
LIMIT_GIB = 1.0
Files = dict[str, tuple[str, str, int]]
"""Digest → (file name, category, pages)."""


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue  # ended between listing and reading
    return total


def _files(quick: bool, inbox: Path) -> Files:
    """Digest → (name, category, pages) of the files put in ``inbox``."""
    found = {}
    if quick:
        sources = []
        for i in range(3):
            make_pdf(inbox / f"gen-{i}.pdf", title=f"Generated {i}", pages=3 + 10 * i, seed=i)
            sources.append((inbox / f"gen-{i}.pdf", "generated"))
    else:
        sources = []
        for number, (path, category) in enumerate(fetch()):
            copy = inbox / f"{number:03d}-{path.name}"
            shutil.copyfile(path, copy)
            sources.append((copy, category))
    for path, category in sources:
        found[sha256_file(path)] = (path.name, category, page_count(path))
    return found


def _gib(size: float) -> str:
    return f"{size / 2**30:.2f}"


def measure(quick: bool) -> tuple[dict[str, int], float, int, Files]:
    """(peak tree RSS per digest, seconds, the run's overall peak, the files)."""
    with tempfile.TemporaryDirectory() as scratch:
        inbox, bucket = Path(scratch) / "in", Path(scratch) / "bucket"
        inbox.mkdir()
        files = _files(quick, inbox)
        processing = bucket / keys.QueueState.PROCESSING.prefix
        command = [*CLI, "run", str(inbox), "--bucket", str(bucket), "--workers", "1"]
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        root = psutil.Process(child.pid)
        peaks: dict[str, int] = defaultdict(int)
        overall = 0
        while child.poll() is None:
            rss = _tree_rss(root)
            overall = max(overall, rss)
            for marker in processing.glob("*") if processing.is_dir() else ():
                peaks[marker.name] = max(peaks[marker.name], rss)
            time.sleep(SAMPLE_SECONDS)
        seconds = time.perf_counter() - started
        return {d: peaks[d] for d in files if d in peaks}, seconds, overall, files


def run(quick: bool) -> str:
    peaks, seconds, overall, files = measure(quick)
    per_category: dict[str, list[int]] = defaultdict(list)
    for digest, peak in peaks.items():
        per_category[files[digest][1]].append(peak)
    rows = []
    for category, values in sorted(per_category.items()):
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        rows.append(
            (category, len(values), _gib(statistics.median(ordered)), _gib(p95), _gib(max(ordered)))
        )
    every = sorted(peaks.values())
    p95 = every[min(len(every) - 1, int(len(every) * 0.95))] if every else 0
    rows.append(
        (
            "all",
            len(every),
            _gib(statistics.median(every) if every else 0),
            _gib(p95),
            _gib(max(every, default=0)),
        )
    )
    heaviest = sorted(peaks.items(), key=lambda item: item[1], reverse=True)[:5]
    over = sum(peak > LIMIT_GIB * 2**30 for peak in every)
    return (
        f"`bucketdigest run` (one worker, default options) over {len(files)} files of the "
        f"real-world corpus in {seconds:.0f} s; peak resident memory of the whole process "
        f"tree while each document was digested, GiB (target: under {LIMIT_GIB:.0f} GiB for "
        f"every document; {over} over; the run's peak {_gib(overall)}):\n\n"
        + table(("category", "documents", "median", "p95", "max"), rows)
        + "\n\nHeaviest: "
        + "; ".join(f"{files[d][0]} ({files[d][2]} pages) {_gib(peak)}" for d, peak in heaviest)
        + ".\n"
    )
