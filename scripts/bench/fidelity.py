"""Page-level fidelity: the facts of ``facts.jsonl`` (read off real pages of the real-world
corpus) and of ``fidelity_pages.py`` (generated pages) checked against the Markdown a user
gets (``bucketdigest run``, default options: each page's Markdown with its OCR text), side by
side with ``pdftotext -layout`` and bare pymupdf4llm (layout mode, its defaults) on the same
pages; pass rate per fact type. ``--quick``: the generated pages alone."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import fidelity_pages
import pymupdf
import sandwiches
from common import table
from corpus import fetch
from facts import check

from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.result import DOCUMENT_STRUCTURE, merged_page
from bucketdigest.worker.document_blocks import (
    ocr_words,
    text_layer_words,
    word_keys,
    words_inside,
)

FACTS = Path(__file__).with_name("facts.jsonl")
TYPES = ("present", "absent", "order", "table")
SYSTEMS = ("bucketdigest", "pdftotext -layout", "pymupdf4llm (bare)")
SANDWICH = "scanned with a text layer"
SANDWICHES = {"pikepdf-9.11.0/tests/resources/sandwich.pdf"}
"""Corpus files that are scans with a text layer (besides those ``sandwiches.py`` makes)."""
BOOK_SCANS = {"pypdf-5.1.0/resources/Seige_of_Vicksburg_Sample_OCR.pdf"}
"""Corpus files that are scans with a book scanner's text layer (word-fitted spans)."""


def _facts(quick: bool, generated: Path) -> list[dict[str, Any]]:
    facts = fidelity_pages.make(generated)
    if not quick:
        facts += loads_lines(FACTS.read_text())
    return facts


def _sources(
    facts: list[dict[str, Any]], generated: Path
) -> tuple[dict[str, Path], dict[str, str]]:
    """Each fact's document as a file, and its kind of page (the corpus category)."""
    wanted = {fact["doc"] for fact in facts}
    found = {doc: generated / doc.removeprefix("generated/") for doc in wanted}
    kinds = dict.fromkeys(found, "generated pages")
    corpus = fetch(fact_pages=True) if any(not d.startswith("generated/") for d in wanted) else []
    derived = {doc for doc in wanted if doc.startswith("derived/")}
    if derived:
        found.update(sandwiches.make(derived, [path for path, _ in corpus], generated / "derived"))
        for doc in derived:
            book = doc.removeprefix("derived/") in sandwiches.BOOK_SCANS
            kinds[doc] = sandwiches.BOOK_SCAN_KIND if book else SANDWICH
    for doc in wanted - derived:
        if doc.startswith("generated/"):
            continue
        matches = [(path, kind) for path, kind in corpus if path.as_posix().endswith("/" + doc)]
        if not matches:
            raise SystemExit(f"{doc}: not in the corpus (corpus.json)")
        found[doc], kinds[doc] = matches[0]
    for doc in wanted & SANDWICHES:
        kinds[doc] = SANDWICH
    for doc in wanted & BOOK_SCANS:
        kinds[doc] = sandwiches.BOOK_SCAN_KIND
    return found, kinds


def _ours(
    sources: dict[str, Path],
    work: Path,
    structures: dict[str, dict[str, Any]],
    python: str = sys.executable,
) -> tuple[dict[tuple[str, int], str], float]:
    """Each (doc, page)'s Markdown with its OCR text, and the run's seconds; each document's
    ``document.json`` (with the OCR's word boxes of its pages) into ``structures``. ``python``:
    the interpreter of the checkout that converts (another one's, for a before-after)."""
    folder = work / "in"
    folder.mkdir(exist_ok=True)
    names = {}
    for number, (doc, path) in enumerate(sorted(sources.items())):
        name = f"{number:03d}-{path.name}"
        shutil.copyfile(path, folder / name)
        names[doc] = sha256_file(path)[0]
    bucket = work / f"bucket-{len(list(work.glob('bucket-*')))}"
    started = time.perf_counter()
    command = [python, "-m", "bucketdigest", "run", str(folder), "--bucket", str(bucket)]
    subprocess.run(
        [*command, "--workers", "2"],
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    pages: dict[tuple[str, int], str] = {}
    for doc, digest in names.items():
        result = bucket / "store" / "out" / f"{digest}.zip"
        if not result.is_file():
            continue
        with zipfile.ZipFile(io.BytesIO(result.read_bytes())) as archive:
            members = set(archive.namelist())
            for member in sorted(m for m in members if m.startswith("pages/")):
                number = int(Path(member).stem)
                ocr = f"ocr/{number:04d}.md"
                text = archive.read(ocr).decode() if ocr in members else ""
                pages[(doc, number)] = merged_page(archive.read(member).decode(), text)
            if DOCUMENT_STRUCTURE in members:
                structures[doc] = json.loads(archive.read(DOCUMENT_STRUCTURE))
                structures[doc]["ocr"] = {
                    int(Path(m).stem): archive.read(m).decode()
                    for m in members
                    if m.startswith("ocr/") and m.endswith(".tsv") and ".rapidocr" not in m
                }
    return pages, seconds


def _located(
    fact: dict[str, Any], structure: dict[str, Any] | None, sources: dict[str, Path]
) -> tuple[bool, bool]:
    """Whether ``fact`` stands in one block of its page in ``document.json``, and whether
    that block's regions hold 95% of its words where the page puts them."""
    if structure is None:
        return False, False
    wanted = word_keys(fact["text"])
    joined = f" {' '.join(wanted)} "
    blocks = [
        b for b in structure["blocks"]
        if b["page"] == fact["page"] and joined in f" {' '.join(word_keys(b['text']))} "
    ]  # fmt: skip
    if not blocks or not wanted:
        return False, False
    size = next((p for p in structure["pages"] if p["page"] == fact["page"]), {})
    if size.get("words") == "ocr":
        words = ocr_words(structure["ocr"].get(fact["page"], ""), size["width"])
    else:
        with pymupdf.open(sources[fact["doc"]]) as doc:
            words = text_layer_words(doc[fact["page"] - 1])
    for block in blocks:
        if words_inside(wanted, block["regions"], words) >= 0.95:
            return True, True
    return True, False


def _pdftotext(path: Path, number: int) -> str:
    command = ["pdftotext", "-layout", "-q", "-f", str(number), "-l", str(number), str(path), "-"]
    done = subprocess.run(command, capture_output=True, check=False)
    return done.stdout.decode("utf-8", "replace")


def _bare(path: Path, number: int) -> str:
    import pymupdf
    import pymupdf4llm

    with contextlib.redirect_stdout(io.StringIO()):
        pymupdf4llm.use_layout(True)
        with pymupdf.open(path) as doc:
            return str(pymupdf4llm.to_markdown(doc, pages=[number - 1], show_progress=False))


def _rate(results: list[bool]) -> str:
    return f"{sum(results) / len(results):.0%} ({sum(results)}/{len(results)})" if results else "-"


BEFORE = "bucketdigest (before)"


def run(quick: bool, before: str | None = None) -> str:
    """The facts checked against each system; ``before``: the Python of another checkout of
    bucketdigest, whose Markdown is checked too (column "bucketdigest (before)")."""
    systems = SYSTEMS if before is None else (SYSTEMS[0], BEFORE, *SYSTEMS[1:])
    with tempfile.TemporaryDirectory(prefix="bucketdigest-fidelity-") as scratch:
        work = Path(scratch)
        facts = _facts(quick, work / "generated")
        sources, kinds = _sources(facts, work / "generated")
        structures: dict[str, dict[str, Any]] = {}
        ours, seconds = _ours(sources, work, structures)
        wanted = sorted({(fact["doc"], fact["page"]) for fact in facts})
        texts = {
            SYSTEMS[0]: {key: ours.get(key, "") for key in wanted},
            SYSTEMS[1]: {key: _pdftotext(sources[key[0]], key[1]) for key in wanted},
            SYSTEMS[2]: {key: _bare(sources[key[0]], key[1]) for key in wanted},
        }
        if before is not None:
            theirs, _ = _ours(sources, work, {}, python=before)
            texts[BEFORE] = {key: theirs.get(key, "") for key in wanted}
        passed: dict[str, dict[str, list[bool]]] = {s: defaultdict(list) for s in systems}
        failures = []
        located: list[tuple[bool, bool]] = []
        outcomes: list[dict[str, bool]] = []
        for fact in facts:
            outcomes.append({})
            for system in systems:
                outcome = check(fact, texts[system][(fact["doc"], fact["page"])])
                passed[system][fact["type"]].append(outcome.passed)
                outcomes[-1][system] = outcome.passed
                if system == SYSTEMS[0] and not outcome.passed:
                    failures.append((fact, outcome.why))
                if system == SYSTEMS[0] and outcome.passed and fact["type"] == "present":
                    located.append(_located(fact, structures.get(fact["doc"]), sources))
    by_kind: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    by_set: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    by_feature: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for fact, system_results in zip(facts, outcomes, strict=True):
        for system, outcome in system_results.items():
            by_kind[kinds[fact["doc"]]][system].append(outcome)
            by_set[fact.get("added", "first rounds")][system].append(outcome)
            if "feature" in fact:
                by_feature[fact["feature"]][system].append(outcome)
    rows = []
    for kind in (*TYPES, "all"):
        cells: list[object] = [kind]
        for system in systems:
            results = (
                [r for k in TYPES for r in passed[system][k]]
                if kind == "all"
                else passed[system][kind]
            )
            cells.append(
                f"{sum(results) / len(results):.0%} ({sum(results)}/{len(results)})"
                if results
                else "-"
            )
        rows.append(cells)
    real = sum(1 for f in facts if not f["doc"].startswith("generated/"))
    real_pages = len(
        {(f["doc"], f["page"]) for f in facts if not f["doc"].startswith("generated/")}
    )
    pages = len(ours)
    in_block = sum(found for found, _ in located)
    covered = sum(inside for _, inside in located)
    lines = [
        f"{len(facts)} facts on {len(wanted)} pages ({real} facts read off {real_pages} real "
        f"pages of the corpus, the rest on generated pages); `bucketdigest run --workers 2` "
        f"on the {len(sources)} documents took {seconds:.0f} s for {pages} pages.",
        "",
        table(["fact type", *systems], rows),
        "",
        f"document.json: of the {len(located)} 'present' facts bucketdigest's Markdown passes, "
        f"{in_block} ({in_block / max(1, len(located)):.0%}) stand in one block of its page, and "
        f"{covered} ({covered / max(1, len(located)):.0%}) in a block whose regions hold at least "
        "95% of the fact's words where the page's text layer (or its OCR) puts them.",
        *_breakdown(
            "By set of facts (``added`` in facts.jsonl: the kinds of page each round added):",
            "facts",
            by_set,
            systems,
        ),
        *_breakdown(
            "By kind of page (the corpus category of the fact's document):",
            "kind of page",
            by_kind,
            systems,
        ),
        *_breakdown(
            "By feature of the page (``feature`` in facts.jsonl: the kinds Markdown round three "
            "names):",
            "feature",
            by_feature,
            systems,
        ),
    ]
    lost = [
        fact
        for fact, results in zip(facts, outcomes, strict=True)
        if results.get(BEFORE) and not results[SYSTEMS[0]]
    ]
    if lost:
        lines += ["", "Facts the other checkout passes and this one misses:", ""]
        lines += [f"- {_described(fact)}" for fact in lost]
    if failures:
        lines += ["", "Facts bucketdigest misses:", ""]
        lines += [f"- {_described(fact)} ({why})" for fact, why in failures]
    return "\n".join(lines)


def _breakdown(
    title: str, column: str, groups: dict[str, dict[str, list[bool]]], systems: tuple[str, ...]
) -> list[str]:
    """A titled table of each group's pass rate per system (nothing without groups)."""
    if not groups:
        return []
    rows = [
        [name, *(_rate(results[system]) for system in systems)] for name, results in groups.items()
    ]
    return ["", title, "", table([column, *systems], sorted(rows))]


def _described(fact: dict[str, Any]) -> str:
    what = fact.get("text") or fact.get("cell") or f"{fact.get('before')} < {fact.get('after')}"
    return f"{fact['type']} `{fact['doc'].rsplit('/', 1)[-1]}` p.{fact['page']}: {str(what)[:70]!r}"


if __name__ == "__main__":
    import sys

    print(run("--quick" in sys.argv))
