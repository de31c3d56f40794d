"""Cost per document: peak memory and CPU time of a worker's process tree (the worker, the
digester child it starts and the OCR engines) while each document of the real-world corpus
(``corpus.py``) is digested, with default options and one worker under ``bucketdigest run``,
the longest ``PER_CATEGORY`` documents of each category in one run (so what a long-lived child
keeps from one document to the next counts); and from those, what a million pages cost.

The run's tree is sampled every ``SAMPLE_SECONDS``: the sum of its processes' proportional set
sizes (a page that n of them share counts 1/n in each: the digester child shares the libraries
of the fork server it was forked from), their resident set sizes (shared pages counted in each
process, an upper bound, reported for the run's peak) and their CPU times (ended children's
included through their parents). A document's peak is the highest sample of the worker's tree
(the ``run`` process itself, one a run whatever its workers, left out) while its
``queue/processing/`` marker exists; its CPU time, what the whole tree used meanwhile.
``--quick`` uses generated PDFs."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import psutil
from common import CLI, table
from corpus import fetch, page_count

from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.shared import keys
from bucketdigest.shared.samples import make_pdf

SAMPLE_SECONDS = 0.1
LIMIT_GIB = 1.0
PER_CATEGORY = 6
"""The longest documents of each category (memory grows with pages): the whole corpus takes
an hour with one worker, mostly OCR."""
CORE_HOUR_USD = 0.0513
"""On-demand price of one vCPU-hour of an AWS c7a.large (2 vCPUs, 4 GiB: $0.1026/h,
us-east-1, Linux, November 2026)."""
REQUEST_USD = {"write": 0.005 / 1000, "read": 0.0004 / 1000}
"""S3 Standard per request: PUT/LIST/POST ("write") and GET/HEAD ("read"); DELETE is free."""
REQUESTS_PER_DOCUMENT = {"write": 6.5, "read": 3.0}
"""Ingest and processing of one document (the "Store requests per document" section: PUT
5.05 + LIST 1.45, GET 2 + HEAD 1)."""


@dataclass
class Measured:
    """What one document cost."""

    name: str
    category: str
    pages: int
    peak: int = 0
    cpu_seconds: float = 0.0


ROLES = {
    0: "the run (ingest, results)",
    1: "its worker",
    2: "the worker's children (digesters, indexer)",
}
"""What a process in the tree is, by its depth; deeper ones (OCR engines) count as depth 2."""


def _tree(root: psutil.Process, roles: dict[int, int]) -> tuple[int, int, int, float]:
    """(proportional bytes of the whole tree and of the workers' trees below ``root``,
    resident bytes, CPU seconds so far) of ``root`` and its descendants; ``roles`` keeps the
    largest proportional sum seen per depth."""
    pss, rss, cpu = 0, 0, 0.0
    by_depth: dict[int, int] = defaultdict(int)
    for process in [root, *root.children(recursive=True)]:
        try:
            memory = process.memory_full_info()
            size = memory.pss
            times = process.cpu_times()
            depth, parent = 0, process
            while parent.pid != root.pid and (parent := parent.parent()) is not None:
                depth += 1
        except psutil.Error:
            continue  # ended between listing and reading
        pss += size
        rss += memory.rss
        by_depth[min(depth, 2)] += size
        cpu += times.user + times.system + times.children_user + times.children_system
    for depth, size in by_depth.items():
        roles[depth] = max(roles.get(depth, 0), size)
    return pss, pss - by_depth[0], rss, cpu


def _files(quick: bool, inbox: Path) -> dict[str, Measured]:
    sources = []
    if quick:
        for i in range(2):
            path = inbox / f"gen-{i}.pdf"
            make_pdf(path, title=f"Generated {i}", pages=2 + 3 * i, seed=i)
            sources.append((path, "generated"))
    else:
        by_category = defaultdict(list)
        for path, category in fetch():
            by_category[category].append((page_count(path), path))
        for category, files in by_category.items():
            for _, path in sorted(files, reverse=True)[:PER_CATEGORY]:
                copy = inbox / f"{len(sources):03d}-{path.name}"
                shutil.copyfile(path, copy)
                sources.append((copy, category))
    return {
        sha256_file(path)[0]: Measured(path.name, category, page_count(path))
        for path, category in sources
    }


def measure(quick: bool) -> tuple[dict[str, Measured], float, tuple[int, int], dict[int, int]]:
    """(what each document cost, the run's seconds, the run's peak proportional and resident,
    the peak per depth)."""
    with tempfile.TemporaryDirectory() as scratch:
        inbox, bucket = Path(scratch) / "in", Path(scratch) / "bucket"
        inbox.mkdir()
        files = _files(quick, inbox)
        processing = bucket / keys.QueueState.PROCESSING.prefix
        command = [*CLI, "run", str(inbox), "--bucket", str(bucket), "--workers", "1"]
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        root = psutil.Process(child.pid)
        overall, resident, previous_cpu, roles = 0, 0, 0.0, {}
        while child.poll() is None:
            pss, worker_pss, rss, cpu = _tree(root, roles)
            overall, resident = max(overall, pss), max(resident, rss)
            busy = [m.name for m in processing.glob("*")] if processing.is_dir() else []
            for digest in busy:
                if digest in files:
                    files[digest].peak = max(files[digest].peak, worker_pss)
                    files[digest].cpu_seconds += max(0.0, cpu - previous_cpu) / len(busy)
            previous_cpu = cpu
            time.sleep(SAMPLE_SECONDS)
        return files, time.perf_counter() - started, (overall, resident), roles


def _gib(size: float) -> str:
    return f"{size / 2**30:.2f}"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else 0.0


def _row(label: str, docs: list[Measured]) -> tuple[str, ...]:
    pages = sum(d.pages for d in docs) or 1
    peaks = [float(d.peak) for d in docs]
    core_hours = sum(d.cpu_seconds for d in docs) / 3600 * 1000 / pages
    requests = sum(REQUESTS_PER_DOCUMENT.values()) * len(docs) / pages * 1000
    million = 1000 * (
        core_hours * CORE_HOUR_USD
        + sum(REQUESTS_PER_DOCUMENT[k] * REQUEST_USD[k] for k in REQUEST_USD)
        * len(docs)
        / pages
        * 1000
    )
    return (
        label,
        str(len(docs)),
        str(pages),
        _gib(statistics.median(peaks)) if peaks else "-",
        _gib(_p95(peaks)),
        _gib(max(peaks, default=0)),
        f"{core_hours:.2f}",
        f"{requests:,.0f}",
        f"${million:,.0f}",
    )


def run(quick: bool) -> str:
    files, seconds, (overall, resident), roles = measure(quick)
    done = [m for m in files.values() if m.peak]
    unseen = [m.name for m in files.values() if not m.peak]
    per_category: dict[str, list[Measured]] = defaultdict(list)
    for measured in done:
        per_category[measured.category].append(measured)
    rows = [_row(category, docs) for category, docs in sorted(per_category.items())]
    rows.append(_row("all", done))
    over = sum(m.peak > LIMIT_GIB * 2**30 for m in done)
    heaviest = sorted(done, key=lambda m: m.peak, reverse=True)[:5]
    return (
        f"`bucketdigest run` (one worker, default options) over {len(files)} files of the "
        f"real-world corpus (the {PER_CATEGORY} longest of each category) in {seconds:.0f} s. "
        f"Peak memory of the worker's process tree (the worker and its children) while each "
        f"document was digested, GiB: the sum of its processes' proportional set sizes, a page "
        f"n of them share counting 1/n in each (target: under {LIMIT_GIB:.0f} GiB for every "
        f"document: {over} over). The `run` process that ingests and gathers the results, one "
        f"a run whatever its workers (`bucketdigest work` has none), is not in it: the whole "
        f"tree's peak was {_gib(overall)} GiB, and {_gib(resident)} with shared pages counted in "
        f"every process that maps them. CPU core-hours per 1,000 pages (the whole tree's); "
        f"store requests per "
        f"1,000 pages; and a million pages of the category at ${CORE_HOUR_USD} per core-hour "
        f"(AWS c7a on demand) and S3 Standard requests (${REQUEST_USD['write'] * 1000} per "
        f"1,000 writes, ${REQUEST_USD['read'] * 1000} per 1,000 reads), storage not included:"
        "\n\n"
        + table(
            (
                "category",
                "documents",
                "pages",
                "median GiB",
                "p95 GiB",
                "max GiB",
                "core-hours / 1k pages",
                "requests / 1k pages",
                "1M pages",
            ),
            rows,
        )
        + "\n\nPeak per process: "
        + "; ".join(f"{ROLES[depth]} {_gib(size)} GiB" for depth, size in sorted(roles.items()))
        + ".\n\nHeaviest: "
        + "; ".join(f"{m.name} ({m.pages} pages) {_gib(m.peak)} GiB" for m in heaviest)
        + ".\n"
        + (
            f"\nNot in the table: {', '.join(sorted(unseen))}, digested between two samples "
            f"({SAMPLE_SECONDS} s apart).\n"
            if unseen
            else ""
        )
    )
