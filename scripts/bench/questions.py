"""Questions in a person's own words over the real-world corpus (``corpus.py``), answered by
each search mode.

``questions.jsonl`` beside this script holds the questions, written by hand from passages of
the corpus's documents in other words than the passage: each names its document, page and
kind, and an ``evidence`` span copied from the passage. The kinds are ordinary paraphrases and
the cases that lose answers: text that repeats (``repeated``: the same passage in several
documents, or slides whose every page repeats its navigation lines), tables with
abbreviations (``table``), formulas (``formula``), an English question about a manual that
also exists in translation (``translation``; the Japanese, Chinese and Korean versions are in
the corpus), questions in other languages (``non-English``), one-page documents, forms,
scanned pages with a text layer, and passages past the first 1,000 characters of their chunk
(``deep``: past what the model read of a long chunk before chunks were read in windows; 50
questions written before windows were built).

A hit answers when its document holds the evidence: every document and page whose indexed
text contains it (letters and digits compared, case and spacing ignored) is an answer, so a
passage repeated in several documents is not held against a mode, while a translation,
which does not hold the English words, is not an answer. Reported per mode: doc@1 (the first
hit is an answering document), doc@10, page@10 (a top-10 hit on an answering page: with one
page either side allowed, and exact, as a reader who opens the hit's page needs it) and the
mean reciprocal rank of the first answering document; and, so
the questions can be judged, the share of a question's content words found on its page.
"""

from __future__ import annotations

import random
import re
import statistics
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from common import table
from ranking import _bucket

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.stores.local import LocalStore

QUESTIONS = Path(__file__).with_name("questions.jsonl")
TOP = 10
_CONTENT = re.compile(r"\w{4,}")
_STOP = set(
    [
        "what",
        "which",
        "where",
        "when",
        "does",
        "with",
        "from",
        "that",
        "this",
        "into",
        "have",
        "there",
        "their",
        "your",
        "they",
        "them",
        "then",
        "than",
        "will",
        "would",
        "should",
        "could",
        "about",
        "after",
        "before",
        "being",
        "other",
        "some",
        "such",
        "only",
        "also",
        "most",
        "more",
        "many",
        "much",
        "very",
        "each",
        "every",
        "like",
        "make",
        "made",
        "used",
        "using",
        "page",
        "pages",
    ]
)


@dataclass(frozen=True)
class Ranks:
    """How one search answered one question."""

    document: int | None
    """The rank of the first answering document (None: not in the top 10)."""
    page_near: bool
    """A top-10 hit on an answering page or a page next to one."""
    page_exact: bool
    """A top-10 hit on an answering page itself."""
    seconds: float


@dataclass(frozen=True)
class Question:
    text: str
    document: str
    page: int
    kind: str
    evidence: str


def squeezed(text: str) -> str:
    """Letters and digits only, case folded: how evidence is found in indexed text whatever
    the converter did to spacing, hyphens, ligatures and punctuation."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def load() -> list[Question]:
    rows = loads_lines(QUESTIONS.read_text(encoding="utf-8"))
    return [Question(**{"text": r.pop("question"), **r}) for r in rows]


def _answers(rows: list[dict], questions: list[Question]) -> list[dict[str, set[int]]]:
    """For each question, the documents (digest → pages) whose indexed text holds its evidence."""
    pages: dict[tuple[str, int], list[str]] = defaultdict(list)
    for row in rows:
        pages[row["digest"], row["page"]].append(row["text"])
    joined = {key: squeezed(" ".join(texts)) for key, texts in pages.items()}
    out = []
    for question in questions:
        wanted = squeezed(question.evidence)
        found: dict[str, set[int]] = defaultdict(set)
        for (digest, page), text in joined.items():
            if wanted in text:
                found[digest].add(page)
        out.append(dict(found))
    return out


def _generated(rows: list[dict]) -> list[Question]:
    """For ``--quick`` (generated rulebooks, none of the corpus): a chunk's last heading asked,
    a span of its text the evidence. The path runs; the numbers mean little."""
    out = []
    for row in random.Random(1).sample(rows, min(20, len(rows))):
        words = row["text"].split()
        if len(words) > 12:
            name = Path(row["names"][0]).name
            asked = " ".join(words[:6])
            out.append(Question(asked, name, row["page"], "generated", " ".join(words[6:12])))
    return out


def _labelled(rows: list[dict], question: Question, answers: dict[str, set[int]]) -> bool:
    """Whether the question's own document and page are among its answers."""
    names = {row["digest"]: row["names"] for row in rows}
    return any(
        any(Path(name).name.endswith(question.document) for name in names[digest])
        and question.page in pages
        for digest, pages in answers.items()
    )


def _overlap(question: Question, rows_by_page: dict[tuple[str, int], str], answers) -> float:
    words = {w for w in _CONTENT.findall(question.text.casefold()) if w not in _STOP}
    if not words or not answers:
        return 0.0
    digest, pages = next(iter(answers.items()))
    text = " ".join(rows_by_page.get((digest, p), "") for p in pages).casefold()
    return sum(w in text for w in words) / len(words)


def _ranks(
    searcher: Searcher, question: Question, answers: dict[str, set[int]], mode: Mode
) -> Ranks:
    """Where the first answering document and the answering pages stand in the top 10, and the
    seconds the search took."""
    started = time.perf_counter()
    hits = searcher.search(SearchRequest(question.text, mode=mode, limit=TOP))
    seconds = time.perf_counter() - started
    rank = next((n for n, hit in enumerate(hits, 1) if hit.digest in answers), None)
    pages = [(hit.page, answers[hit.digest]) for hit in hits if hit.digest in answers]
    near = any(page is not None and any(abs(page - p) <= 1 for p in held) for page, held in pages)
    exact = any(page in held for page, held in pages)
    return Ranks(rank, near, exact, seconds)


def _cells(results: list[Ranks]) -> list[str]:
    count = len(results) or 1
    at1 = sum(r.document == 1 for r in results) / count
    at10 = sum(r.document is not None for r in results) / count
    near = sum(r.page_near for r in results) / count
    exact = sum(r.page_exact for r in results) / count
    mrr = sum(1 / r.document for r in results if r.document) / count
    return [f"{at1:.2f}", f"{at10:.2f}", f"{near:.2f}", f"{exact:.2f}", f"{mrr:.2f}"]


def run(quick: bool) -> str:
    bucket = _bucket(quick)
    settings = StoreSettings(bucket=str(bucket))
    index_bucket(LocalStore(bucket), settings, rebuild=True)
    searcher = Searcher.open(settings)
    rows = searcher.chunks.to_table(columns=["digest", "page", "text", "names"]).to_pylist()
    questions = _generated(rows) if quick else load()
    answers = _answers(rows, questions)
    answerable = [(q, a) for q, a in zip(questions, answers, strict=True) if a]
    unlabelled = [q for q, a in answerable if not _labelled(rows, q, a)]
    by_page: dict[tuple[str, int], str] = defaultdict(str)
    for row in rows:
        by_page[row["digest"], row["page"]] += " " + row["text"]
    overlaps = [_overlap(q, by_page, a) for q, a in answerable]

    if not answerable:
        return "No question could be answered from this bucket.\n"
    kinds = sorted({q.kind for q, _ in answerable})
    lines, by_kind, seconds = [], {}, {}
    for mode in (Mode.KEYWORD, Mode.SEMANTIC, Mode.HYBRID):
        searcher = Searcher.open(settings)  # its kept query vectors would flatter later modes
        results = [_ranks(searcher, q, a, mode) for q, a in answerable]
        lines.append([mode.value, *_cells(results)])
        seconds[mode] = statistics.median(r.seconds for r in results) * 1000
        if mode is Mode.HYBRID:
            for kind in kinds:
                pairs = zip(answerable, results, strict=True)
                by_kind[kind] = [r for (q, _), r in pairs if q.kind == kind]
    header = ["mode", "doc@1", "doc@10", "page@10 (±1)", "page@10 (exact)", "MRR"]
    origin = (
        "made from the chunks themselves"
        if quick
        else "`scripts/bench/questions.jsonl`, written by hand in other words than their passage"
    )
    corpus = "generated rulebooks" if quick else "real-world corpus"
    kind_lines = [[f"{kind} ({len(r)})", *_cells(r)] for kind, r in by_kind.items()]
    missing = len(questions) - len(answerable)
    return (
        f"{len(answerable)} questions ({origin}) over {len({r['digest'] for r in rows})} "
        f"documents ({len(rows):,} chunks) of the {corpus}, digested with default options; "
        f"a question's content words found on its page: median "
        f"{statistics.median(overlaps):.0%}, mean {statistics.mean(overlaps):.0%}. "
        f"In-process `Searcher`, top {TOP}; median search "
        + ", ".join(f"{m.value} {s:.0f} ms" for m, s in seconds.items())
        + ".\n\n"
        + table(header, lines)
        + "\n\nHybrid, by kind of question:\n\n"
        + table(["kind", *header[1:]], kind_lines)
        + "\n"
        + (
            f"\n{missing} questions whose evidence no indexed text holds were left out.\n"
            if missing
            else ""
        )
        + (
            "\nQuestions whose own page is not among the pages holding their evidence: "
            + "; ".join(f"{q.document} p{q.page}" for q in unlabelled)
            + "\n"
            if unlabelled
            else ""
        )
    )


if __name__ == "__main__":
    print(run(quick=False))
