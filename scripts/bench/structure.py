"""document.json on real documents: how well each block's region covers its words, and what the
file adds to a result (bytes and time per page); and on the same results, what a reader sees:
tags made of table header words alone, and snippets that still show Markdown.

The corpus's paged documents (PDFs and e-books, every category, at most ``PAGES`` pages each)
are converted with ``bucketdigest run`` and its default options. For every block with words,
the words of its page's text layer whose centres fall inside its regions are compared with the
block's own words (the test's measure: at least 95% should be inside). Pages read by OCR are
measured against the OCR's words instead. The time is that of building document.json again
from each result (the pages, the OCR words and the source), per page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path
from statistics import median

import pymupdf
from common import CLI, table
from corpus import fetch, page_count

from bucketdigest.search.snippet import make_snippet
from bucketdigest.shared.archives import extract
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.pagetext import document_pages
from bucketdigest.shared.result import CHUNKS, DOCUMENT_STRUCTURE, OcrAside, ocr_aside_member
from bucketdigest.worker import rapid_ocr
from bucketdigest.worker.document_blocks import (
    MARGIN_Y,
    Word,
    document_structure,
    ocr_words,
    rapid_ocr_words,
    text_layer_words,
    word_keys,
    words_inside,
)

PAGES = 40
"""Longer documents are left out (the bench should take minutes)."""


_MARKDOWN = re.compile(r"\*\*|(?<!\w)_[^_\s]+_(?!\w)|\||^#|!\[|\]\(|<!--")
"""What a snippet shows when Markdown is left in it: emphasis, table pipes, headings, image
and link syntax, comments."""
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]{9}")
"""Nine Chinese or Japanese characters without a space: a run of words, not one."""


def no_topic(tag: str) -> bool:
    """A tag that says a word twice, or holds a run of unspaced words."""
    words = tag.casefold().split()
    return len(set(words)) < len(words) or _UNSPACED.search(tag) is not None


class Reading:
    """Tags and snippets of the results, as a reader sees them."""

    def __init__(self) -> None:
        self.documents = self.tags = self.header_tags = self.with_tables = 0
        self.no_topic: list[str] = []
        self.snippets = self.marked = self.with_code = 0
        self.examples: list[str] = []
        self.marked_examples: list[str] = []

    def add(self, structure: dict, tree: Path) -> None:
        blocks = structure["blocks"]
        header = {
            key
            for b in blocks
            if b["kind"] == "table"
            for row in b.get("rows") or []
            for cell in row
            if cell.get("header")
            for key in word_keys(cell["text"])
        }
        body = {
            key
            for b in blocks
            if b["kind"] in ("heading", "paragraph", "list_item")
            for key in word_keys(b["text"])
        }
        tags_file = tree / "tags.json"
        tags = (
            [t["keyword"] for t in json.loads(tags_file.read_text())] if tags_file.is_file() else []
        )
        self.documents += 1
        self.with_tables += bool(header)
        self.tags += len(tags)
        self.no_topic += [tag for tag in tags if no_topic(tag)]
        for tag in tags:
            words = set(word_keys(tag))
            if words and words <= header and not words <= body:
                self.header_tags += 1
                if len(self.examples) < 5:
                    self.examples.append(tag)
        chunks_file = tree / CHUNKS
        if chunks_file.is_file():
            code = {b["id"] for b in blocks if b["kind"] == "code"}
            for chunk in loads_lines(chunks_file.read_text(encoding="utf-8")):
                if code & set(chunk.get("blocks") or ()):
                    self.with_code += 1  # a listing's pipes and marks are its text
                    continue
                self.snippets += 1
                shown = make_snippet(chunk["text"], "", width=100_000).text
                if found := _MARKDOWN.search(shown):
                    self.marked += 1
                    if len(self.marked_examples) < 5:
                        start = max(0, found.start() - 25)
                        self.marked_examples.append(shown[start : found.end() + 25])

    def report(self, results: int) -> str:
        return (
            f"The same {results} results: {self.tags} tags of {self.documents} documents "
            f"({self.with_tables} with tables); {self.header_tags} tags made of table header "
            "words alone (every word in a header cell, not all in the headings, paragraphs and "
            f"list items)"
            + (f", such as {', '.join(repr(e) for e in self.examples)}" if self.examples else "")
            + f"; {len(self.no_topic)} tags that say a word twice or hold a run of unspaced "
            "Chinese or Japanese words"
            + (
                f", such as {', '.join(repr(t) for t in self.no_topic[:3])}"
                if self.no_topic
                else ""
            )
            + f". Snippets of every chunk without code ({self.snippets}; {self.with_code} "
            f"holding a listing left out): {self.marked} still show Markdown "
            "(emphasis, table pipes, heading marks, image or link syntax, comments)"
            + (
                ", such as " + "; ".join(repr(e) for e in self.marked_examples)
                if self.marked_examples
                else ""
            )
            + ".\n"
        )


def _kind(block: dict, page: dict) -> str:
    """The row a block is counted in: its kind; a running line that is a bare number a page
    number; any block of a page read by OCR an OCR'd page's."""
    if page["words"] == "ocr":
        return "(on OCR'd pages)"
    if block["kind"] == "running" and re.fullmatch(r"[\divxlcIVXLC]{1,5}", block["text"].strip()):
        return "page number"
    return str(block["kind"])


def _page_words(page: pymupdf.Page, tree: Path, entry: dict) -> list[Word]:
    """The words a block was located among: the text layer's, or the OCR's kept in the
    result (PP-OCR's lines when its reading was kept, else Tesseract's words)."""
    if entry["words"] == "text-layer":
        return text_layer_words(page)
    number = entry["page"]
    lines = tree / ocr_aside_member(number, OcrAside.SECOND_READER)
    if lines.is_file():
        zoom = rapid_ocr.zoom(page.rect.width, page.rect.height)
        return rapid_ocr_words(lines.read_text(encoding="utf-8"), zoom)
    tsv = tree / ocr_aside_member(number, OcrAside.WORDS)
    return ocr_words(tsv.read_text(encoding="utf-8"), page.rect.width) if tsv.is_file() else []


def run(quick: bool) -> tuple[str, str]:
    files = [(p, c) for p, c in fetch() if p.suffix.lower() in (".pdf", ".epub", ".xps", ".cbz")]
    chosen = [(p, c) for p, c in files if 0 < page_count(p) <= PAGES][: 4 if quick else None]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sources: dict[str, Path] = {}
        for number, (path, category) in enumerate(chosen):
            copy = root / "in" / re.sub(r"\W+", "-", category) / f"{number:03d}-{path.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            sources[copy.name] = copy
        bucket = root / "bucket"
        subprocess.run([*CLI, "run", str(root / "in"), "--bucket", str(bucket)],
                       capture_output=True)  # fmt: skip
        shares: dict[str, list[float]] = defaultdict(list)
        located: dict[str, list[bool]] = defaultdict(list)
        in_margin: list[bool] = []
        reading = Reading()
        sizes, pages_total, seconds, chain_seconds = 0, 0, 0.0, 0.0
        results = sorted((bucket / "store" / "out").glob("*.zip"))
        missing: list[str] = []
        for archive in results:
            with zipfile.ZipFile(archive) as opened:
                info = json.loads(opened.read("info.json"))
                if DOCUMENT_STRUCTURE not in opened.namelist():
                    missing.append(
                        f"{info.get('names')}: {info.get('outputs', {}).get('chunks')}"
                        f" {[p for p in info.get('problems', []) if 'search' in p]}"
                    )
                    continue
                raw = opened.read(DOCUMENT_STRUCTURE)
                structure = json.loads(raw)
                tree = root / "tree" / archive.stem
                extract(opened, tree)
            source = next((sources[n.rsplit("/", 1)[-1]] for n in info.get("names", [])
                           if n.rsplit("/", 1)[-1] in sources), None)  # fmt: skip
            if source is None:
                continue
            sizes += len(raw)
            pages_total += len(structure["pages"])
            chain_seconds += sum((info.get("provenance") or {}).get("seconds", {}).values())
            started = time.perf_counter()
            document_structure(archive.stem, document_pages(tree), tree, source)
            seconds += time.perf_counter() - started
            reading.add(structure, tree)
            doc = pymupdf.open(source)
            words_of: dict[int, list[Word]] = {}
            for block in structure["blocks"]:
                if not block["text"] or block["kind"] == "picture":
                    continue
                page = structure["pages"][block["page"] - 1]
                kinds = [_kind(block, page)]
                if kinds[0] == "page number" and block["regions"]:
                    height = page["height"] or 1
                    margin = all(
                        r["y1"] < height * MARGIN_Y or r["y0"] > height * (1 - MARGIN_Y)
                        for r in block["regions"]
                    )
                    in_margin.append(margin)
                for kind in kinds:
                    located[kind].append(bool(block["regions"]))
                if not block["regions"] or page["words"] == "none":
                    continue
                if block["page"] not in words_of:
                    words_of[block["page"]] = _page_words(doc[block["page"] - 1], tree, page)
                share = words_inside(
                    word_keys(block["text"]), block["regions"], words_of[block["page"]]
                )
                for kind in kinds:
                    shares[kind].append(share)
            doc.close()
            shutil.rmtree(tree)
    rows = []
    for kind in sorted(located):
        found = shares.get(kind, [])
        rows.append((
            kind,
            len(located[kind]),
            f"{sum(located[kind]) / len(located[kind]):.1%}",
            f"{median(found):.1%}" if found else "—",
            f"{sum(s >= 0.95 for s in found) / len(found):.1%}" if found else "—",
        ))  # fmt: skip
    everything = [s for kind in shares for s in shares[kind]]
    blocks = sum(len(v) for v in located.values())
    rows.append((
        "all", blocks, f"{sum(sum(v) for v in located.values()) / max(1, blocks):.1%}",
        f"{median(everything):.1%}" if everything else "—",
        f"{sum(s >= 0.95 for s in everything) / max(1, len(everything)):.1%}",
    ))  # fmt: skip
    header = ("block kind", "blocks", "with a region", "median words inside",
              "blocks with ≥95% inside")  # fmt: skip
    regions = (
        f"{len(results)} corpus documents with pages ({pages_total} pages, up to {PAGES} a "
        "document), `bucketdigest run` with its default options. Words inside: of a block's "
        "words, the share found among the page's words (its text layer's, or for a page read "
        "by OCR the OCR's) whose centres lie in its regions. Page numbers are the running "
        "lines that are a bare number; blocks of OCR'd pages are counted in their own row.\n\n"
        + table(header, rows)
        + f"\n\nPage numbers boxed in the page's top or bottom band: {sum(in_margin)} of "
        f"{len(in_margin)} ({sum(in_margin) / max(1, len(in_margin)):.1%}).\n"
        + f"\n\ndocument.json adds {sizes / max(1, pages_total) / 1024:.1f} KiB a page "
        f"(stored deflated in the zip: less) and takes {seconds / max(1, pages_total) * 1000:.0f}"
        " ms a page to build (the search-keyword digester), "
        f"{seconds / max(chain_seconds, 1e-9):.1%} of the whole chain's time on these documents "
        f"({chain_seconds / max(1, pages_total):.2f} s a page).\n"
        + "".join(f"\n- no document.json: {m}" for m in missing)
    )
    return regions, reading.report(len(results))
