"""Real-world PDFs (``corpus.py``): per category, documents out / failed / lost, pages/s and
word recall of the Markdown against poppler's ``pdftotext``; the whole default chain with two
workers against two bare layout-mode converter loops on the same files, side by side (also
without the file bare pymupdf4llm is slowest on, and with the loops' models on one thread each
as the chain's workers run theirs); and the chain with the options before the cost-per-page
work (:data:`BEFORE`), for doc-to-markdown's pages/s per worker both ways.

``--quick`` uses a few generated PDFs instead (no download): it checks the code runs.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from common import CLI, table
from corpus import fetch, page_count

from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.shared import keys
from bucketdigest.shared.pagetext import word_counts, word_recall
from bucketdigest.shared.result_links import broken_links
from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.scanned import word_share
from bucketdigest.worker.digesters.doc_to_markdown.unmapped import LATIN_END
from bucketdigest.worker.model_threads import share_of_cores

TEXT_MIN_WORDS = 20
"""A file is a text PDF when pdftotext finds at least this many words in it."""

_ARABIC = "\u0600-\u06ff\ufb50-\ufdff\ufe70-\ufefc"
_EMBEDDING = "\u200e\u200f\u202a-\u202e"
_LATIN_IN_ARABIC = re.compile(
    f"[{_ARABIC}][{_EMBEDDING}]*[A-Za-z]{{1,4}}[{_EMBEDDING}]*[{_ARABIC}]"
)
GARBLED_SHARE = 0.01
"""pdftotext's text of a file is garbled when Latin letters sit inside Arabic words (between
directional marks) for more than this share of its Arabic letters: fonts whose glyphs poppler
maps to Latin letters by their encoding ("توفيق" as "ﺗ‪w‬ﻓ‪y‬ﻖ"), which MuPDF reads right."""


def _mean(scores: list[float]) -> str:
    return f"{sum(scores) / len(scores):.3f}" if scores else "-"


GARBAGE_WORDS = 0.25
"""pdftotext's text of a file is garbage too when fewer of its tokens read as words
(:func:`.scanned.word_share`) and its letters are mostly Latin: a legacy font whose codes map
to Latin-1 symbols and stray letters (Arabic set as ``T`§rK``), whose pages page-ocr reads
instead of that text layer (:mod:`.unmapped`)."""


def _garbled(reference: str) -> bool:
    arabic = len(re.findall(f"[{_ARABIC}]", reference))
    if arabic > 0 and len(_LATIN_IN_ARABIC.findall(reference)) > GARBLED_SHARE * arabic:
        return True
    letters = [character for character in reference if character.isalpha()]
    latin = sum(ord(character) < LATIN_END for character in letters)
    return latin > len(letters) / 2 and word_share(reference) < GARBAGE_WORDS


BARE_LOOP = """
import os, sys, pathlib, time
if os.environ.get("MODEL_THREADS"):  # before pymupdf.layout loads its model
    from bucketdigest.worker.model_threads import limit_sessions
    limit_sessions(int(os.environ["MODEL_THREADS"]))
import pymupdf, pymupdf4llm
pymupdf4llm.use_layout(True)
out = pathlib.Path(sys.argv[1])
for number, name in enumerate(sys.argv[2:]):
    images = out / str(number)
    images.mkdir()
    started, pages = time.perf_counter(), 0
    try:
        chunks = pymupdf4llm.to_markdown(pymupdf.open(name), page_chunks=True, write_images=True,
            image_path=str(images), image_format="png", dpi=150, filename="page",
            show_progress=False, use_ocr=False)
        pages = len(chunks)
    except Exception:
        pass
    print(f"{time.perf_counter() - started:.3f}\t{pages}\t{name}", flush=True)
"""


@dataclass(frozen=True)
class BareRun:
    """Two bare layout loops at once on page-balanced shares."""

    seconds: float
    pages: int
    slowest: tuple[float, Path]
    """The file one loop took longest over, with its seconds."""


def running_lines(archive: zipfile.ZipFile) -> str:
    """The running heads, feet and page numbers taken out of the pages (kept in pages.json):
    ``pdftotext`` prints them, so recall counts them where they are kept."""
    if "pages.json" not in archive.namelist():
        return ""
    pages = json.loads(archive.read("pages.json")).get("running", [])
    return "\n" + "\n".join(line for page in pages for line in page["header"] + page["footer"])


def poppler(command: str, path: Path) -> str | None:
    done = subprocess.run([command, str(path), "-"], capture_output=True, timeout=120)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def _pdfinfo_reads(path: Path) -> bool:
    done = subprocess.run(["pdfinfo", str(path)], capture_output=True, timeout=60)
    return done.returncode == 0 and b"Pages:" in done.stdout


def _halves(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """The files in two shares of about the same number of pages (largest first), as two
    workers taking documents from one queue would share them."""
    shares: tuple[list[Path], list[Path]] = ([], [])
    totals = [0, 0]
    for path, count in sorted(((f, page_count(f)) for f in files), key=lambda fc: -fc[1]):
        lighter = totals.index(min(totals))
        shares[lighter].append(path)
        totals[lighter] += count
    return shares


def _bare_pair(files: list[Path], root: Path, model_threads: int | None = None) -> BareRun:
    """Two bare layout loops at once on page-balanced shares, each model on ``model_threads``
    threads (None: onnxruntime's default, a thread per core)."""
    env = {**os.environ, "MODEL_THREADS": str(model_threads or "")}
    started = time.perf_counter()
    loops = []
    for share in _halves(files):
        out = Path(tempfile.mkdtemp(dir=root))
        command = [CLI[0], "-c", BARE_LOOP, str(out), *map(str, share)]
        loops.append(subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True))
    done = [
        line.split("\t") for loop in loops for line in loop.communicate()[0].split("\n") if line
    ]
    seconds = time.perf_counter() - started
    slowest = max((float(took), Path(name)) for took, _, name in done)
    return BareRun(seconds, sum(int(pages) for _, pages, _ in done), slowest)


BEFORE = ("--no-plain-pages", "--layout-features", "text+image", "--model-threads", "0")
"""The chain's options before the cost-per-page work: every page by the layout model that sees
the page image, each model on onnxruntime's threads (a thread per core)."""


def _chain(inbox: Path, bucket: Path, options: tuple[str, ...] = ()) -> float:
    """Seconds ``bucketdigest run --workers 2`` takes over ``inbox``."""
    started = time.perf_counter()
    command = [*CLI, "run", str(inbox), "--bucket", str(bucket), "--workers", "2", *options]
    subprocess.run(command, capture_output=True)
    return time.perf_counter() - started


def digester_seconds(archive: zipfile.ZipFile) -> dict[str, float]:
    """The seconds each digester's outputs took on the document of a result zip. The chain
    runs its outputs one after another and their records are all made when the job starts, so
    an output's time runs from the previous output's last stamp (the first's: the records'
    making) to its own."""
    spent: dict[str, float] = defaultdict(float)
    outputs = [o for o in json.loads(archive.read("digests.json"))["outputs"] if o["created_at"]]
    stamped = sorted(
        (
            (datetime.fromisoformat(o["updated_at"]), datetime.fromisoformat(o["created_at"]), o)
            for o in outputs
        ),
        key=lambda stamps: stamps[:2],
    )
    last = None
    for ended, made, output in stamped:
        begun = made if last is None else max(made, last)
        spent[output["digester"]] += (ended - begun).total_seconds()
        last = ended
    return spent


def markdown_time(archive: zipfile.ZipFile) -> tuple[float, int]:
    """(seconds, pages) doc-to-markdown spent on the document of a result zip."""
    pages = int(json.loads(archive.read("info.json"))["pages"])
    return digester_seconds(archive).get("doc-to-markdown", 0.0), pages


def _markdown_rate(bucket: Path) -> tuple[float, int]:
    """(seconds, pages) doc-to-markdown spent in the run's workers, over its documents."""
    seconds, pages = 0.0, 0
    for out in (bucket / keys.OUT_PREFIX).glob("*.zip"):
        with zipfile.ZipFile(out) as archive:
            spent, count = markdown_time(archive)
        seconds += spent
        pages += count
    return seconds, pages


def _seconds(records: dict) -> float:
    stamps = [(o["created_at"], o["updated_at"]) for o in records["outputs"] if o["created_at"]]
    first = min(datetime.fromisoformat(a) for a, _ in stamps)
    last = max(datetime.fromisoformat(b) for _, b in stamps)
    return (last - first).total_seconds()


def _core_hours_per_million(seconds: float, pages: int, cores: int = 2) -> str:
    """What a million pages cost at this rate on ``cores`` cores kept busy: the price of a
    run in the unit a buyer of machines reads."""
    return f"{seconds * cores / 3600 / pages * 1_000_000:,.0f}"


def corpus_files(quick: bool, root: Path) -> list[tuple[Path, str]]:
    if quick:
        return [
            (make_pdf(root / f"gen-{i}.pdf", title=f"Gen {i}", pages=2, seed=i), "generated")
            for i in range(3)
        ]
    return fetch()


def run(quick: bool) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        files = corpus_files(quick, root / "gen")
        inbox = root / "in"
        placed: list[tuple[Path, str, str]] = []  # (copy, category, digest)
        for number, (path, category) in enumerate(files):
            copy = inbox / re.sub(r"\W+", "-", category) / f"{number:03d}-{path.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            placed.append((copy, category, sha256_file(copy)[0]))
        bucket = root / "bucket"
        chain_seconds = _chain(inbox, bucket)
        before_seconds = _chain(inbox, root / "bucket-before", BEFORE)
        converter = {
            "before": _markdown_rate(root / "bucket-before"),
            "now": _markdown_rate(bucket),
        }
        bare = _bare_pair([p for p, _, _ in placed], root)
        rest = [p for p, _, _ in placed if p != bare.slowest[1]]
        bare_rest = _bare_pair(rest, root)
        bare_shared = _bare_pair(rest, root, model_threads=share_of_cores(2))
        stats: dict[str, dict] = defaultdict(lambda: defaultdict(float))
        recalls: dict[str, list[tuple[float, bool]]] = defaultdict(list)
        chain_pages = broken = 0
        seen: set[str] = set()
        for copy, category, digest in placed:
            row = stats[category]
            row["files"] += 1
            readable = _pdfinfo_reads(copy)
            row["readable"] += readable
            out = bucket / keys.out_key(digest)
            failed = bucket / keys.queue_key(keys.QueueState.FAILED, digest)
            if not out.is_file():
                row["failed" if failed.is_file() else "lost"] += 1
                continue
            row["out"] += 1
            row["readable out"] += readable
            with zipfile.ZipFile(io.BytesIO(out.read_bytes())) as archive:
                info = json.loads(archive.read("info.json"))
                markdown = archive.read("document.md").decode() + running_lines(archive)
                records = json.loads(archive.read("digests.json"))
                if digest not in seen:
                    broken += len(broken_links(archive))
            if digest not in seen:
                seen.add(digest)
                row["pages"] += info["pages"]
                row["seconds"] += _seconds(records)
                chain_pages += info["pages"]
            text = poppler("pdftotext", copy) or ""
            reference = word_counts(text)
            if sum(reference.values()) >= TEXT_MIN_WORDS:
                score = word_recall(markdown, reference)
                recalls[category].append((score, _garbled(text)))
                if score < 0.8 and not info["problems"]:
                    row["low, unexplained"] += 1
    rows = []
    for category, row in sorted(stats.items()):
        scores = [score for score, _ in recalls[category]]
        readable_scores = [score for score, garbled in recalls[category] if not garbled]
        rows.append(
            (
                category,
                int(row["files"]),
                int(row["out"]),
                int(row["failed"]),
                int(row["lost"]),
                f"{int(row['readable out'])}/{int(row['readable'])}",
                int(row["pages"]),
                f"{row['pages'] / row['seconds']:.2f}" if row["seconds"] else "-",
                len(scores),
                _mean(scores),
                f"{min(scores):.3f}" if scores else "-",
                len(scores) - len(readable_scores),
                _mean(readable_scores),
                int(row["low, unexplained"]),
            )
        )
    total = {k: sum(r[k] for r in stats.values()) for k in ("files", "out", "failed", "lost")}
    readable = sum(r["readable"] for r in stats.values())
    readable_out = sum(r["readable out"] for r in stats.values())
    every = [score for scores in recalls.values() for score, _ in scores]
    readable_every = [score for scores in recalls.values() for score, bad in scores if not bad]
    chain_rate = chain_pages / chain_seconds
    rates = {when: pages / seconds for when, (seconds, pages) in converter.items()}
    slowest = f"{bare.slowest[1].name.split('-', 1)[1]}"
    return (
        f"{int(total['files'])} files ({len(seen)} distinct documents) in {len(stats)} "
        f"categories; default options, `bucketdigest run --workers 2` on the local store.\n\n"
        + table(
            (
                "category",
                "files",
                "out",
                "failed",
                "lost",
                "pdfinfo-readable out",
                "pages",
                "pages/s per worker",
                "text PDFs",
                "mean recall",
                "min recall",
                "pdftotext garbled",
                "mean recall, pdftotext not garbled",
                "< 0.8 unexplained",
            ),
            rows,
        )
        + f"\n\nIn all: {int(total['out'])} out, {int(total['failed'])} failed, "
        f"{int(total['lost'])} lost; {readable_out:.0f} of the {readable:.0f} files `pdfinfo` "
        f"reads are in `store/out/` ({100 * readable_out / max(readable, 1):.1f}%); mean word "
        f"recall against `pdftotext` {_mean(every)} over {len(every)} text PDFs, "
        f"{_mean(readable_every)} over the {len(readable_every)} whose `pdftotext` text is not "
        f"garbled (Latin letters inside Arabic words, or a text of Latin letters and symbols "
        f"under {GARBAGE_WORDS:.0%} words). Pages/s per worker: a category's pages "
        f"over the sum of its documents' chain time (first output started to last output "
        f"finished). Recall counts the running heads, feet and page numbers taken out of the "
        f"pages where they are kept (pages.json), as `pdftotext` prints them. Broken links "
        f"(a link in a Markdown member naming no member of its zip): {broken}.\n\n"
        + table(
            (
                "on the same files, 2 processes",
                "seconds",
                "pages",
                "pages/s",
                "core-hours / 1M pages",
                "chain / this",
            ),
            [
                (
                    "full default chain (`run --workers 2`)",
                    f"{chain_seconds:.0f}",
                    chain_pages,
                    f"{chain_rate:.2f}",
                    _core_hours_per_million(chain_seconds, chain_pages),
                    "",
                ),
                *(
                    (
                        label,
                        f"{run.seconds:.0f}",
                        run.pages,
                        f"{run.pages / run.seconds:.2f}",
                        _core_hours_per_million(run.seconds, run.pages),
                        f"{chain_rate / (run.pages / run.seconds):.2f}x",
                    )
                    for label, run in (
                        ("two bare layout-mode converter loops", bare),
                        (
                            f"the same without {slowest} ({bare.slowest[0]:.0f} s in one loop)",
                            bare_rest,
                        ),
                        (
                            f"the same without {slowest}, each loop's models on "
                            f"{share_of_cores(2)} thread(s), as the chain's workers",
                            bare_shared,
                        ),
                    )
                ),
            ],
        )
        + "\n\n"
        + table(
            ("the chain (`run --workers 2`) with", "seconds", "doc-to-markdown pages/s per worker"),
            [
                (
                    f"the options before the cost-per-page work (`{' '.join(BEFORE)}`)",
                    f"{before_seconds:.0f}",
                    f"{rates['before']:.2f}",
                ),
                (
                    "the defaults",
                    f"{chain_seconds:.0f}",
                    f"{rates['now']:.2f}",
                ),
            ],
        )
        + "\n\ndoc-to-markdown pages/s per worker: pages over the seconds its outputs took in the "
        'workers (the issue\'s measure of the converter, "1.2 pages/s per process"); defaults / '
        f"before: {rates['now'] / rates['before']:.2f}x."
        + '\n\nTarget (issue "cost per page, round two"): the chain 1.4x two bare loops or '
        f"better (moonshot 1.6x). The chain's time includes {slowest}; its workers' models run "
        "on the machine's cores shared out (`--model-threads`), bare loops' on onnxruntime's "
        "default unless the row says so. Core-hours per million pages: the row's seconds on "
        "its 2 cores, at its pages' rate.\n"
    )
