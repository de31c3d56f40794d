"""Throughput: the bare converter in a loop against `bucketdigest run` with 1 and 2 workers."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pymupdf
from common import CLI, moto_server, new_bucket, table, timed

from bucketdigest.shared.samples import make_pdf

BARE_LOOP = """
import sys, pathlib, pymupdf, pymupdf4llm
pymupdf4llm.use_layout(sys.argv[1] == "layout")
out = pathlib.Path(sys.argv[2])
for number, name in enumerate(sys.argv[3:]):
    doc = pymupdf.open(name)
    images = out / str(number)
    images.mkdir()
    pymupdf4llm.to_markdown(doc, page_chunks=True, write_images=True, image_path=str(images),
                            image_format="png", dpi=150, filename="page", show_progress=False)
"""


def make_documents(folder: Path, quick: bool) -> list[Path]:
    """Varied rulebooks: 4 to 16 pages each, at least 300 pages in all (6 when quick)."""
    sizes = [2, 4] if quick else [4, 8, 12, 16] * 7 + [4, 8, 12]
    return [
        make_pdf(folder / f"doc-{i:03d}.pdf", title=f"Doc {i}", pages=n, seed=i)
        for i, n in enumerate(sizes)
    ]


def _bare(root: Path, mode: str, docs: list[Path]) -> float:
    out = root / "bare"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    return timed([CLI[0], "-c", BARE_LOOP, mode, str(out), *map(str, docs)])


def _bare_pair(root: Path, mode: str, docs: list[Path]) -> float:
    """Two bare loops at once, alternate documents each: what 2 cores give the converter alone."""
    started = time.perf_counter()
    loops = []
    for half in (0, 1):
        out = root / f"bare-{half}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        command = [CLI[0], "-c", BARE_LOOP, mode, str(out), *map(str, docs[half::2])]
        loops.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
    for loop in loops:
        if loop.wait() != 0:
            raise RuntimeError("a bare loop failed")
    return time.perf_counter() - started


def _run(root: Path, mode: str, workers: int, target: list[str]) -> float:
    options = ["--workers", str(workers), "--converter-mode", mode]
    return timed([*CLI, "run", str(root / "pdfs"), *target, *options])


def _local(root: Path, mode: str, workers: int) -> float:
    bucket = root / "bucket"
    shutil.rmtree(bucket, ignore_errors=True)
    return _run(root, mode, workers, ["--bucket", str(bucket)])


def _moto(root: Path, mode: str, workers: int) -> float:
    with moto_server() as endpoint:
        target = ["--bucket", f"s3://{new_bucket(endpoint)}/b", "--endpoint-url", endpoint]
        return _run(root, mode, workers, target)


def run(quick: bool, mode: str, repeat: int) -> str:
    """Each configuration ``repeat`` times, interleaved; the fastest run of each counts (this
    VM's speed drifts by 10-15% from one minute to the next). ``quick`` runs each store and
    each worker count once (a run's start costs seconds): the other cells read "-"."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        docs = make_documents(root / "pdfs", quick)
        pages = sum(pymupdf.open(d).page_count for d in docs)
        best: dict[str, float] = {}
        configs = {
            "bare": lambda: _bare(root, mode, docs),
            "bare-pair": lambda: _bare_pair(root, mode, docs),
            "local-1": lambda: _local(root, mode, 1),
            "local-2": lambda: _local(root, mode, 2),
            "moto-1": lambda: _moto(root, mode, 1),
            "moto-2": lambda: _moto(root, mode, 2),
        }
        if quick:
            del configs["local-2"], configs["moto-1"]
        for _ in range(repeat):
            for name, measure in configs.items():
                best[name] = min(best.get(name, float("inf")), measure())

    def rate(name: str) -> str:
        return f"{pages / best[name]:.2f}" if name in best else "-"

    def ratio(over: str, name: str) -> str:
        return f"{best[over] / best[name]:.2f}" if name in best else "-"

    rows = []
    for store, key in (("local", "local"), ("moto server", "moto")):
        one, two = f"{key}-1", f"{key}-2"
        rates = (rate("bare"), rate("bare-pair"), rate(one), rate(two))
        ratios = (ratio("bare", one), ratio("bare", two), ratio("bare-pair", two))
        rows.append((store, *rates, *ratios))
    header = (
        "store",
        "(a) bare loop pages/s",
        "(a2) two bare loops",
        "(b) run, 1 worker",
        "(c) run, 2 workers",
        "b/a",
        "c/a",
        "c/a2",
    )
    note = f"{len(docs)} documents, {pages} pages, converter mode `{mode}`, best of {repeat}.\n\n"
    return note + table(header, rows)
