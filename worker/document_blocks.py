"""``document.json``: the document as blocks in reading order, each with its page, its kind and
text, and its regions on the page (PDF points, origin top-left), so an answer can be pointed at.

The blocks are read off each page's final Markdown (what every other output is made from: the
converter's text with its OCR and linked-page text merged in), one Markdown block each: a
heading (with its level), a paragraph, a list item, a table (rows of cells), a picture (its
image member, and the caption after it), a caption, a footnote, a formula, code; a page's
running header and footer lines (kept aside in ``pages.json``) are blocks of kind ``running``.
The chunks (``chunks.jsonl``) are cut from these same blocks, so the two cannot disagree.

A block's regions come from the words of the page it stands on: the PDF's text layer
(PyMuPDF's word boxes) or, for a page read by OCR, Tesseract's word boxes (``ocr/NNNN.tsv``,
scaled from pixels to points). The block's words are aligned with the page's words in reading
order (:class:`difflib.SequenceMatcher`), each page word used by one block only; the region is
the box around the words found, one per column or line group where they jump. ``coverage``
says what share of the block's words were found; a block none of whose words is on the page
(a caption the converter wrote, a page without a text layer nobody read) has no region.
Sources without pages (web pages, Office files, text, audio) have blocks without regions.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import logging
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.result import PAGE_INDEX, OcrAside, ocr_aside_member
from bucketdigest.worker import rapid_ocr

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_MARKDOWN = MarkdownIt("commonmark").enable("table")
_LINE_ENDS = re.compile(r"\r\n?|\n")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)")
_CAPTION = re.compile(
    r"^\s*(?:\*\*|_|\*)?\s*(?:figure|fig\.|table|tab\.|abbildung|abb\.|tabelle|chart|plate|map)"
    r"\s*[\dIVXivx]",
    re.IGNORECASE,
)
_FOOTNOTE = re.compile(r"^\s*(?:\[\^[^\]]+\]:|[¹²³⁴⁵⁶⁷⁸⁹⁰]+|<sup>\s*\w+\s*</sup>|\^\w+\^?)\s*\S")
_FORMULA = re.compile(r"^\s*\$\$.*\$\$\s*$", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)
_GAP_WORDS = 12
"""Page words between two found words beyond which they belong to different regions."""


@dataclass
class Word:
    """A word of a page and its box, in points from the page's top-left corner."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class Block:
    kind: str
    text: str
    page: int
    markdown: str
    level: int | None = None
    rows: list[list[dict[str, Any]]] | None = None
    image: str | None = None
    caption: str | None = None
    regions: list[dict[str, float]] = field(default_factory=list)
    coverage: float | None = None

    def as_json(self, number: int) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": f"b{number}",
            "kind": self.kind,
            "page": self.page,
            "text": self.text,
            "regions": self.regions,
        }
        optional = {
            "level": self.level,
            "rows": self.rows,
            "image": self.image,
            "caption": self.caption,
            "coverage": self.coverage,
        }
        return data | {k: v for k, v in optional.items() if v is not None}


def _key(word: str) -> str:
    """A word as compared between the Markdown and the page: letters and digits, case and
    accents folded (ligatures and full-width forms too, by NFKD)."""
    folded = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in folded if not unicodedata.combining(c))


def word_keys(text: str) -> list[str]:
    return [k for k in (_key(w) for w in _WORD.findall(text)) if k]


def _inline_text(token: Token) -> str:
    return plain_text(token.content)


def _table_rows(tokens: list[Token], start: int) -> tuple[list[list[dict[str, Any]]], int]:
    """The rows of the table opening at ``start``, and the index after it."""
    rows: list[list[dict[str, Any]]] = []
    n = start + 1
    header = False
    while tokens[n].type != "table_close":
        kind = tokens[n].type
        if kind == "thead_open":
            header = True
        elif kind == "thead_close":
            header = False
        elif kind == "tr_open":
            rows.append([])
        elif kind in ("th_open", "td_open"):
            cell = {"text": _inline_text(tokens[n + 1]), "header": header or kind == "th_open"}
            rows[-1].append(cell | {"colspan": 1, "rowspan": 1})
        n += 1
    return rows, n + 1


def _lines(markdown: str, token: Token) -> str:
    if token.map is None:
        return ""
    lines = _LINE_ENDS.split(markdown)  # as markdown-it numbers lines (not str.splitlines)
    return "\n".join(lines[token.map[0] : token.map[1]])


def page_blocks(markdown: str, page: int) -> list[Block]:
    """The blocks of one page's Markdown, in order."""
    tokens = _MARKDOWN.parse(markdown)
    blocks: list[Block] = []
    in_item = 0
    n = 0
    while n < len(tokens):
        token = tokens[n]
        kind = token.type
        if kind == "list_item_open":
            in_item += 1
        elif kind == "list_item_close":
            in_item -= 1
        elif kind == "heading_open":
            level = int(token.tag[1])
            text = _inline_text(tokens[n + 1])
            blocks.append(Block("heading", text, page, _lines(markdown, token), level=level))
        elif kind == "paragraph_open":
            source = tokens[n + 1].content
            blocks.append(_paragraph(source, page, _lines(markdown, token), in_item > 0))
        elif kind == "table_open":
            rows, after = _table_rows(tokens, n)
            text = "\n".join(" | ".join(cell["text"] for cell in row) for row in rows)
            blocks.append(Block("table", text, page, _lines(markdown, token), rows=rows))
            n = after
            continue
        elif kind in ("fence", "code_block"):
            blocks.append(Block("code", token.content.rstrip("\n"), page, _lines(markdown, token)))
        elif kind == "html_block":
            text = plain_text(token.content)
            if text:
                blocks.append(Block("paragraph", text, page, _lines(markdown, token)))
        n += 1
    _attach_captions(blocks)
    return [b for b in blocks if b.text or b.kind == "picture"]


def _paragraph(source: str, page: int, markdown: str, in_item: bool) -> Block:
    images = _IMAGE.findall(source)
    text = plain_text(source)
    if images and not _IMAGE.sub("", source).strip():
        return Block("picture", "", page, markdown, image=images[0])
    if in_item:
        return Block("list_item", text, page, markdown)
    if _FORMULA.match(source):
        return Block("formula", source.strip().strip("$").strip(), page, markdown)
    if _CAPTION.match(text):
        return Block("caption", text, page, markdown)
    if _FOOTNOTE.match(source):
        return Block("footnote", text, page, markdown)
    return Block("paragraph", text, page, markdown)


def _attach_captions(blocks: list[Block]) -> None:
    """A picture takes the caption just after it (or just before, when none follows)."""
    for n, block in enumerate(blocks):
        if block.kind != "picture":
            continue
        for neighbour in (n + 1, n - 1):
            if 0 <= neighbour < len(blocks) and blocks[neighbour].kind == "caption":
                block.caption = blocks[neighbour].text
                break


def text_layer_words(page: Any) -> list[Word]:
    """A PyMuPDF page's words with their boxes (points, top-left origin), in reading order."""
    return [Word(w[4], w[0], w[1], w[2], w[3]) for w in page.get_text("words", sort=False)]


def ocr_words(tsv: str, page_width: float) -> list[Word]:
    """Tesseract's words of a page (its TSV) in points: its page row gives the width in pixels
    the page was read at, ``page_width`` (points) the scale."""
    words = []
    scale = 0.0
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        try:
            left, top = float(row["left"]), float(row["top"])
            width, height = float(row["width"]), float(row["height"])
        except (KeyError, TypeError, ValueError):
            continue
        if row.get("level") == "1" and width > 0:
            scale = page_width / width
        text = (row.get("text") or "").strip()
        if not text or row.get("level") != "5" or not scale:
            continue
        words.append(
            Word(text, left * scale, top * scale, (left + width) * scale, (top + height) * scale)
        )
    return words


def rapid_ocr_words(tsv: str, zoom: float) -> list[Word]:
    """PP-OCR's lines of a page (``ocr/NNNN.rapidocr.tsv``, in pixels of the page rendered at
    ``zoom``) that became its text, as words in points: a line's width shared among its words
    by their length (a line of Chinese, without spaces, is one word)."""
    words: list[Word] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        try:
            score = float(row["score"])
            x0, y0, x1, y1 = (float(row[k]) / zoom for k in ("x0", "y0", "x1", "y1"))
        except (KeyError, TypeError, ValueError):
            continue
        tokens = (row.get("text") or "").split()
        if score < rapid_ocr.SCORE_FLOOR or not tokens or x1 <= x0:
            continue
        unit = (x1 - x0) / (sum(len(t) for t in tokens) + len(tokens) - 1)
        left = x0
        for token in tokens:
            right = left + unit * len(token)
            words.append(Word(token, left, y0, right, y1))
            left = right + unit
    return words


def _region(words: list[Word], page: int) -> dict[str, float]:
    return {
        "page": page,
        "x0": round(min(w.x0 for w in words), 2),
        "y0": round(min(w.y0 for w in words), 2),
        "x1": round(max(w.x1 for w in words), 2),
        "y1": round(max(w.y1 for w in words), 2),
    }


def _groups(found: list[int]) -> Iterator[list[int]]:
    """Found page-word indices split where they jump (another column, another place)."""
    group: list[int] = []
    for index in found:
        if group and index - group[-1] > _GAP_WORDS:
            yield group
            group = []
        group.append(index)
    if group:
        yield group


_HYPHENS = ("-", "\u00ad", "\u2010")


def page_keys(words: list[Word]) -> list[tuple[str, tuple[int, ...]]]:
    """The page's words as compared with a block's, each with the page words it comes from:
    one page word may hold several (``d20-roll``), and a word broken over two lines with a
    hyphen (``exam-`` ``ple``) is one (``example``), as the Markdown joins it."""
    keys: list[tuple[str, tuple[int, ...]]] = []
    n = 0
    while n < len(words):
        text = words[n].text
        if text.endswith(_HYPHENS) and n + 1 < len(words) and words[n + 1].y0 > words[n].y0:
            joined = word_keys(text.rstrip("".join(_HYPHENS)) + words[n + 1].text)
            keys.extend((k, (n, n + 1)) for k in joined)
            n += 2
            continue
        keys.extend((k, (n,)) for k in word_keys(text))
        n += 1
    return keys


def words_inside(wanted: list[str], regions: list[dict[str, float]], words: list[Word]) -> float:
    """The share of ``wanted`` (a block's word keys) among the page's words whose centres lie
    in ``regions``: how well regions cover a block, as the tests and benchmarks measure it."""
    inside: list[str] = []
    for key, indices in page_keys(words):
        centres = [
            ((words[i].x0 + words[i].x1) / 2, (words[i].y0 + words[i].y1) / 2) for i in indices
        ]
        if all(
            any(r["x0"] <= x <= r["x1"] and r["y0"] <= y <= r["y1"] for r in regions)
            for x, y in centres
        ):
            inside.append(key)
    held = sum(min(inside.count(k), wanted.count(k)) for k in set(wanted))
    return held / len(wanted) if wanted else 1.0


SHORT_BLOCK = 4
"""A block of fewer words (a formula, a page number, a label) is placed only where its words
stand together, nearest its neighbours in reading order: matched loosely, its few words would
be found anywhere on the page (the same symbols in the prose, the same number in a reference)."""
LOCAL_BACK = 8
LOCAL_AHEAD = 40
"""How far (in page words) before and after the words the previous block took a block is
looked for first: the page's words mostly run in the Markdown's order."""
LOCAL_SHARE = 0.6
"""A longer block found near its neighbours with this share of its words stays there."""
MARGIN_X = 0.1
MARGIN_Y = 0.15
"""The page's margin bands (shares of its width and height): where running lines stand."""


def _in_margin(word: Word, width: float, height: float) -> bool:
    x, y = (word.x0 + word.x1) / 2, (word.y0 + word.y1) / 2
    return not (
        width * MARGIN_X < x < width * (1 - MARGIN_X)
        and height * MARGIN_Y < y < height * (1 - MARGIN_Y)
    )


class _Aligner:
    """One page's words, each taken by one block at most, found for blocks in reading order."""

    def __init__(self, words: list[Word], width: float | None, height: float | None) -> None:
        self.words = words
        self.flat = page_keys(words)
        self.used = [False] * len(words)
        self.cursor = 0
        """The flat index after the words the last block took."""
        margin = [
            width is not None and height is not None and _in_margin(w, width, height) for w in words
        ]
        self.in_margin = [all(margin[i] for i in indices) for _, indices in self.flat]

    def _free(self, i: int) -> bool:
        return not any(self.used[n] for n in self.flat[i][1])

    def _matched(self, wanted: list[str], allowed: list[bool], lo: int, hi: int) -> list[int]:
        """Flat indices (from ``lo`` to ``hi``) of ``wanted``'s words among the free, allowed
        page words, in order."""
        lo, hi = max(lo, 0), min(hi, len(self.flat))
        available = [
            self.flat[i][0] if allowed[i] and self._free(i) else "\0" for i in range(lo, hi)
        ]
        matcher = difflib.SequenceMatcher(None, available, wanted, autojunk=False)
        return [lo + i for a, _, size in matcher.get_matching_blocks() for i in range(a, a + size)]

    def _together(self, wanted: list[str], allowed: list[bool], lo: int, hi: int) -> list[int]:
        """Flat indices of ``wanted``'s words standing together (starting from ``lo`` to
        ``hi``), the run nearest the cursor."""
        size = len(wanted)
        runs = [
            start
            for start in range(max(lo, 0), min(hi, len(self.flat) - size + 1))
            if all(
                self.flat[start + k][0] == wanted[k]
                and allowed[start + k]
                and self._free(start + k)
                for k in range(size)
            )
        ]
        if not runs:
            return []
        start = min(runs, key=lambda s: (abs(s - self.cursor), s < self.cursor))
        return list(range(start, start + size))

    def find(self, wanted: list[str], running: bool) -> list[int]:
        """The flat indices of ``wanted`` (a block's words): near the previous block's first,
        then anywhere (a short block only where its words stand together); a running line's
        in the margin bands first."""
        everywhere = [True] * len(self.flat)
        scopes = [self.in_margin, everywhere] if running else [everywhere]
        near = (self.cursor - LOCAL_BACK, self.cursor + len(wanted) + LOCAL_AHEAD)
        short = len(wanted) < SHORT_BLOCK
        search = self._together if short else self._matched
        for scope in scopes:
            found = search(wanted, scope, *near)
            if len(found) >= (len(wanted) if short else LOCAL_SHARE * len(wanted)):
                return found
            found = search(wanted, scope, 0, len(self.flat))
            if found:
                return found
        # a short block whose words the page spells apart (``mc²``: ``mc`` ``2``): near its
        # neighbours, loosely
        found = self._matched(wanted, everywhere, *near) if short else []
        return found if len(found) * 2 >= len(wanted) else []


def locate(
    blocks: list[Block],
    words: list[Word],
    page: int,
    size: tuple[float, float] | None = None,
) -> None:
    """Give each block of ``page`` its regions and coverage from the page's ``words``
    (``size``: the page's width and height in points, for its margin bands). Longer blocks
    are placed first, in reading order; then the short ones, each near the words its
    neighbour before it took, among the words left."""
    if not words:
        return
    width, height = size if size is not None else (None, None)
    aligner = _Aligner(words, width, height)
    wanted = [word_keys(block.text) for block in blocks]
    ends: list[int | None] = [None] * len(blocks)
    """Past the words each block took (flat indices): where the next short one is looked for."""
    for short in (False, True):
        for n, block in enumerate(blocks):
            if not wanted[n] or (len(wanted[n]) < SHORT_BLOCK) is not short:
                continue
            if short:
                aligner.cursor = next((e for e in reversed(ends[:n]) if e is not None), 0)
            found = aligner.find(wanted[n], running=block.kind == "running")
            block.coverage = round(len(found) / len(wanted[n]), 3)
            if not found:
                continue
            ends[n] = aligner.cursor = max(found) + 1
            groups = list(_groups(sorted({i for f in found for i in aligner.flat[f][1]})))
            # a word matched alone far from the rest ("the", "of") is not the block
            kept = [g for g in groups if len(g) >= 2 or len(groups) == 1]
            for group in kept:
                for index in group:
                    aligner.used[index] = True
                block.regions.append(_region([words[i] for i in group], page))


def _running_blocks(page_index: dict[str, Any], page: int) -> tuple[list[Block], list[Block]]:
    """The running lines the converter took off ``page`` (``pages.json``), as blocks."""
    running = page_index.get("running") or []
    lines = running[page - 1] if page - 1 < len(running) else {}

    def made(position: str) -> list[Block]:
        texts = [(plain_text(line), line) for line in lines.get(position, [])]
        return [Block("running", text, page, line) for text, line in texts if text]

    return made("header"), made("footer")


def document_structure(
    digest: str, pages: list[str], tree: Path, source: Path | None
) -> dict[str, Any]:
    """``document.json`` of a document whose final page Markdown is ``pages``; ``source`` is
    its PDF (None for sources without pages)."""
    index_path = tree / PAGE_INDEX
    page_index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    doc = _open_pdf(source)
    page_sizes: list[dict[str, Any]] = []
    blocks: list[Block] = []
    try:
        for number, markdown in enumerate(pages, start=1):
            header, footer = _running_blocks(page_index, number)
            found = [*header, *page_blocks(markdown, number), *footer]
            located = _located(doc, found, tree, number) if doc is not None else None
            if located is not None:
                page_sizes.append(located)
            else:
                page_sizes.append({"page": number, "width": None, "height": None, "words": "none"})
            blocks.extend(found)
    finally:
        if doc is not None:
            doc.close()
    _join_tables_over_breaks(blocks)
    return {
        "schema_version": SCHEMA_VERSION,
        "document": digest,
        "pages": page_sizes,
        "blocks": [block.as_json(n) for n, block in enumerate(blocks, start=1)],
    }


def _located(doc: Any, blocks: list[Block], tree: Path, number: int) -> dict[str, Any] | None:
    """Give ``blocks`` their regions on page ``number`` of ``doc``; the page's entry of
    ``pages``, or None when the page cannot be read (its blocks then have no regions: the
    regions never cost a document its chunks)."""
    try:
        if number > doc.page_count:
            return None
        page = doc[number - 1]
        words, origin = _page_words(page, tree, number)
        size = {"width": round(page.rect.width, 2), "height": round(page.rect.height, 2)}
    except Exception as exc:  # a page MuPDF cannot read (the converter read it otherwise)
        log.warning("page %d: no regions (%s)", number, exc)
        return None
    locate(blocks, words, number, (size["width"], size["height"]))
    return {"page": number, **size, "words": origin}


def _open_pdf(source: Path | None) -> Any:
    if source is None:
        return None
    import pymupdf

    try:
        doc = pymupdf.open(source)
        if doc.needs_pass and not doc.authenticate(""):  # its pages cannot be read
            doc.close()
            return None
        doc.page_count  # noqa: B018  (a damaged page tree raises here, not later)
    except Exception as exc:  # the converter read it with another engine: no regions
        log.warning("%s: no regions (%s)", source.name, exc)
        return None
    return doc


def _page_words(page: Any, tree: Path, number: int) -> tuple[list[Word], str]:
    """The page's words: its OCR's when OCR read it (PP-OCR's when its reading was the one
    kept, else Tesseract's: the page's text is theirs, whatever text layer it has, as under
    ``force_ocr``), else its text layer's; and which."""
    lines = tree / ocr_aside_member(number, OcrAside.SECOND_READER)
    if lines.is_file():
        zoom = rapid_ocr.zoom(page.rect.width, page.rect.height)
        return rapid_ocr_words(lines.read_text(encoding="utf-8"), zoom), "ocr"
    tsv = tree / ocr_aside_member(number, OcrAside.WORDS)
    if tsv.is_file():
        return ocr_words(tsv.read_text(encoding="utf-8"), page.rect.width), "ocr"
    words = text_layer_words(page)
    return (words, "text-layer") if words else ([], "none")


def _join_tables_over_breaks(blocks: list[Block]) -> None:
    """A table that ends a page and one that starts the next with as many columns and no
    heading between are one table: its rows and regions joined (the header row of the second,
    when it repeats the first's, dropped)."""
    n = 0
    while n < len(blocks) - 1:
        first = blocks[n]
        after = n + 1
        while after < len(blocks) and blocks[after].kind == "running":
            after += 1
        if after >= len(blocks):
            break
        second = blocks[after]
        if (
            first.kind == "table"
            and second.kind == "table"
            and second.page == first.page + 1
            and first.rows
            and second.rows
            and len(first.rows[0]) == len(second.rows[0])
            and _last_of_page(blocks, n)
        ):
            rows = second.rows
            if [c["text"] for c in rows[0]] == [c["text"] for c in first.rows[0]]:
                rows = rows[1:]
            first.rows = first.rows + [[c | {"header": False} for c in row] for row in rows]
            first.text = "\n".join(" | ".join(c["text"] for c in row) for row in first.rows)
            first.regions = first.regions + second.regions
            first.markdown = first.markdown + "\n" + second.markdown
            del blocks[after]
            continue
        n += 1


def _last_of_page(blocks: list[Block], n: int) -> bool:
    later = [b for b in blocks[n + 1 :] if b.page == blocks[n].page and b.kind != "running"]
    return not later
