"""Throughput: the bare converter in a loop against `bucketdigest run` with 1 and 2 workers."""

from __future__ import annotations

import tempfile
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
    sizes = [2, 4] if quick else [4, 8, 12, 16] * 7 + [4, 8]
    return [
        make_pdf(folder / f"doc-{i:03d}.pdf", title=f"Doc {i}", pages=n, seed=i)
        for i, n in enumerate(sizes)
    ]


def run(quick: bool, mode: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        docs = make_documents(root / "pdfs", quick)
        pages = sum(pymupdf.open(d).page_count for d in docs)
        (root / "bare").mkdir()
        bare = timed([CLI[0], "-c", BARE_LOOP, mode, str(root / "bare"), *map(str, docs)])
        rows = []
        common = ["--converter-mode", mode]
        for store in ("local", "moto server"):
            results = []
            for workers in (1, 2):
                if store == "local":
                    target = ["--bucket", str(root / f"bucket-{workers}")]
                    seconds = timed(
                        [
                            *CLI,
                            "run",
                            str(root / "pdfs"),
                            *target,
                            "--workers",
                            str(workers),
                            *common,
                        ]
                    )
                else:
                    with moto_server() as endpoint:
                        target = [
                            "--bucket",
                            f"s3://{new_bucket(endpoint)}/b",
                            "--endpoint-url",
                            endpoint,
                        ]
                        seconds = timed(
                            [
                                *CLI,
                                "run",
                                str(root / "pdfs"),
                                *target,
                                "--workers",
                                str(workers),
                                *common,
                            ]
                        )
                results.append(seconds)
            b, c = results
            rows.append(
                (
                    store,
                    f"{pages / bare:.2f}",
                    f"{pages / b:.2f}",
                    f"{pages / c:.2f}",
                    f"{bare / b:.2f}",
                    f"{bare / c:.2f}",
                )
            )
    header = (
        "store",
        "(a) bare loop pages/s",
        "(b) run, 1 worker",
        "(c) run, 2 workers",
        "b/a",
        "c/a",
    )
    return f"{len(docs)} documents, {pages} pages, converter mode `{mode}`.\n\n" + table(
        header, rows
    )
