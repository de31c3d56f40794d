"""Plain pages, and their conversion without the layout model.

Most pages of manuals and books are one column of running text with headings. The layout
model (pymupdf4llm's layout mode) is what converting a page costs, and on such a page it finds
what the text layer already says. So a page is converted from its text layer alone when it
shows nothing the model is needed for: no image, hardly any vector graphics (tables, charts
and forms are drawn), no two blocks side by side (columns, sidebars), no spans set far apart
on a line (tables without rules), horizontal text only, in scripts read left to right
(right-to-left text has layout-mode fixes of its own, :mod:`rtl`; Chinese, Japanese and
Korean lines are joined as layout mode's are, :mod:`tidy`, :mod:`hangul`).

The Markdown follows layout mode's conventions, so both engines' pages read alike and the
steps after the converter treat them alike: a paragraph per block on one line, headings (a
block in a larger size than the page's text, or a short bold block) written with their font
size as :mod:`headers` ranks them over the document, ``**bold**``, ``_italic_``, `` `code` ``,
``<sup>`` for raised text, links, ``-`` for bulleted items, fenced blocks for monospaced ones,
and a short block in the top or bottom margin marked as a running head (:mod:`running`).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.code_blocks import code_lines
from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED
from bucketdigest.worker.digesters.doc_to_markdown.running import is_page_number
from bucketdigest.worker.digesters.doc_to_markdown.tidy import joined_lines

MAX_DRAWINGS = 6
"""Vector paths a plain page may have: rules under headings, a frame; a table has more."""
MIN_CHARACTERS = 200
"""Less text than this (a title page, a figure page) is left to the layout model."""
_NOT_PLAIN_SCRIPT = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]"  # Hebrew, Arabic, Syriac, Thaana
)
_GAP = 3.0
"""Spans of one line further apart than this many times the font size: aligned columns."""
_MARGIN = 0.1
"""Share of the page height at its top and bottom where running heads stand."""
_RUNNING_GAP = 1.0
"""A running head stands further than this many body sizes from the text; closer, a block in
the margin is the text's own first or last paragraph."""
_CELL_GAP = 1.0
"""Lines of one band this many times their font size apart: table cells."""
_SECTION_NUMBER = re.compile(r"^\(?(?:\d+|[IVXivx]+|[A-Z])(?:\.\d+)*\.?\)?$")
_DOT_LEADERS = re.compile(r"(?:\. ?){6,}")
"""A table of contents: its lines are entries, not a paragraph."""
_BULLET = re.compile(
    "^[\u2022\u25e6\u25aa\u25ab\u25cf\u25cb\u25a0\u25a1\u2023\u2043\u2219\u00b7\u2013\u2014-]\\s*"
)
"""A bullet, a dash or a hyphen opening a line: an item of a list."""
_SUPERSCRIPT, _ITALIC, _MONOSPACED, _BOLD = 1, 2, 8, 16
_FLAGS = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES


def _side_by_side(boxes: list[tuple[float, float, float, float]]) -> bool:
    """Whether two blocks share a band of the page without sharing its width: columns, a
    sidebar, a figure's labels."""
    ordered = sorted(boxes, key=lambda box: box[1])
    for n, (x0, y0, x1, y1) in enumerate(ordered):
        for a0, b0, a1, b1 in ordered[n + 1 :]:
            if b0 >= y1:
                break
            if min(y1, b1) - b0 > 0.5 * min(y1 - y0, b1 - b0) and (a0 >= x1 or x0 >= a1):
                return True
    return False


def _table_rows(lines: list[dict[str, Any]]) -> int:
    """How many bands of the page hold lines set apart by a cell's gap (a table's rows): a
    section number beside its title does not count, nor do lines MuPDF cut at a wide space."""
    ordered = sorted(lines, key=lambda line: line["bbox"][1])
    rows = 0
    for n, line in enumerate(ordered):
        x0, y0, x1, y1 = line["bbox"]
        size = max((s["size"] for s in line["spans"]), default=10.0)
        for other in ordered[n + 1 :]:
            a0, b0, a1, b1 = other["bbox"]
            if b0 >= y1:
                break
            apart = max(a0 - x1, x0 - a1)
            left = line if x0 < a0 else other
            label = "".join(s["text"] for s in left["spans"]).strip()
            if (
                min(y1, b1) - b0 > 0.5 * min(y1 - y0, b1 - b0)
                and apart >= _CELL_GAP * size
                and not _SECTION_NUMBER.match(label)
            ):
                rows += 1
                break
    return rows


def _aligned_columns(lines: list[dict[str, Any]]) -> bool:
    """Whether lines hold spans far apart (a table set without rules, a form)."""
    for line in lines:
        spans = [s for s in line["spans"] if s["text"].strip()]
        for left, right in itertools.pairwise(spans):
            if right["bbox"][0] - left["bbox"][2] > _GAP * max(left["size"], 1.0):
                return True
    return False


def _blocks(page: pymupdf.Page) -> list[dict[str, Any]]:
    return [b for b in page.get_text("dict", flags=_FLAGS)["blocks"] if b.get("lines")]


def is_plain(page: pymupdf.Page) -> bool:
    """Whether ``page`` is one column of text the model would only read as it stands."""
    if page.get_images(full=False):
        return False
    blocks = _blocks(page)
    text = "".join(s["text"] for b in blocks for line in b["lines"] for s in line["spans"])
    if len(text.strip()) < MIN_CHARACTERS or _NOT_PLAIN_SCRIPT.search(text):
        return False
    lines = [line for b in blocks for line in b["lines"]]
    if any(abs(line["dir"][1]) > 1e-3 for line in lines) or _aligned_columns(lines):
        return False
    if _side_by_side([tuple(b["bbox"]) for b in blocks]):
        return False
    height = page.rect.height
    inner = [
        line
        for line in lines
        if _MARGIN * height < line["bbox"][3] and line["bbox"][1] < (1 - _MARGIN) * height
    ]  # a running head sets its parts apart (page number, title)
    if _table_rows(inner) >= 2 or _DOT_LEADERS.search(text):
        return False
    return len(page.get_cdrawings()) <= MAX_DRAWINGS


def _styled(text: str, flags: int) -> str:
    core = text.strip()
    if not core:
        return text
    if flags & _MONOSPACED:
        core = f"`{core}`"
    else:
        if flags & _ITALIC:
            core = f"_{core}_"
        if flags & _BOLD:
            core = f"**{core}**"
    if flags & _SUPERSCRIPT:
        core = f"<sup>{core}</sup>"
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() else ""
    return f"{lead}{core}{trail}"


def _style(span: dict[str, Any]) -> int:
    return int(span["flags"]) & (_SUPERSCRIPT | _ITALIC | _MONOSPACED | _BOLD)


def _line_text(line: dict[str, Any], links: list[tuple[pymupdf.Rect, str]]) -> str:
    """The line's spans, runs of one style written once, links around their words."""
    pieces = []
    for style, spans in itertools.groupby(line["spans"], key=_style):
        run = list(spans)
        text = _styled("".join(s["text"] for s in run), style)
        box = pymupdf.Rect(run[0]["bbox"]) | pymupdf.Rect(run[-1]["bbox"])
        inside = pymupdf.Point(box.x0 + 1, box.y0 + 1)
        target = next((uri for rect, uri in links if rect.contains(inside)), None)
        if target and text.strip():
            text = f"[{text.strip()}]({target})"
        pieces.append(text)
    return "".join(pieces).strip()


def _kind(block: dict[str, Any], body: int, height: float, apart: tuple[float, float]) -> str:
    """What a block is; ``apart``: its distance from the blocks above and below it."""
    spans = _spans(block["lines"])
    words = sum(len(s["text"].split()) for s in spans)
    top, bottom = block["bbox"][1], block["bbox"][3]
    small = words <= 15 and all(round(s["size"]) <= body for s in spans)
    if small and bottom < _MARGIN * height and apart[1] >= _RUNNING_GAP * body:
        return "header"
    if small and top > (1 - _MARGIN) * height and apart[0] >= _RUNNING_GAP * body:
        return "footer"
    if all(int(s["flags"]) & _MONOSPACED for s in spans):
        return "code"
    if all(round(s["size"]) > body for s in spans) and words <= 20:
        return "heading"
    if _is_heading_line(spans, body) and len(block["lines"]) <= 2:
        return "heading"
    return "text"


def _is_heading_line(spans: list[dict[str, Any]], body: int) -> bool:
    """Short bold text (or larger than the body's), not ending a sentence."""
    words = sum(len(s["text"].split()) for s in spans)
    styled = all(int(s["flags"]) & _BOLD or round(s["size"]) > body for s in spans)
    return (
        bool(spans)
        and styled
        and words <= 12
        and not spans[-1]["text"].rstrip().endswith((".", ":"))
    )


def _headings_apart(blocks: list[dict[str, Any]], body: int) -> list[dict[str, Any]]:
    """Blocks whose first lines are a heading (a number, a title) over a paragraph in another
    style (MuPDF put a section's title and its first paragraph in one block), each as two."""
    out = []
    for block in blocks:
        lines = block["lines"]
        title = 0
        while title < len(lines) and _is_heading_line(_spans(lines[: title + 1]), body):
            title += 1
        if 0 < title < len(lines):
            for part in (lines[:title], lines[title:]):
                box = pymupdf.Rect(part[0]["bbox"])
                for line in part[1:]:
                    box |= pymupdf.Rect(line["bbox"])
                out.append({**block, "lines": part, "bbox": tuple(box)})
        else:
            out.append(block)
    return out


def _spans(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for line in lines for s in line["spans"] if s["text"].strip()]


def _gaps(blocks: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Each block's distance from the block above it and the one below (a page edge: inf)."""
    if not blocks:
        return []
    edges = [(b["bbox"][1], b["bbox"][3]) for b in blocks]
    above = [-float("inf"), *(bottom for _, bottom in edges[:-1])]
    below = [*(top for top, _ in edges[1:]), float("inf")]
    return [(t - up, down - b) for (t, b), up, down in zip(edges, above, below, strict=True)]


def _held(
    blocks: list[dict[str, Any]],
    kinds: list[str],
    gaps: list[tuple[float, float]],
    number: int,
    body: int,
) -> bool:
    """Whether text goes on close under block ``number`` (a reference's second line): no
    foot then (a page number under a foot is no such text)."""
    if number + 1 >= len(blocks) or kinds[number + 1] == "footer" or gaps[number][1] >= body:
        return False
    below = " ".join(s["text"] for s in _spans(blocks[number + 1]["lines"]))
    return not is_page_number(below)


def _goes_on_a_run(
    blocks: list[dict[str, Any]], gaps: list[tuple[float, float]], number: int
) -> bool:
    """Whether block ``number`` goes on the run of blocks above it (flush left with them, as
    far from the one above as that one is from its own): a list's or a bibliography's last
    entry at the foot of a page, not a foot."""
    if number < 2:
        return False
    lefts = [blocks[n]["bbox"][0] for n in (number - 2, number - 1, number)]
    gap, previous_gap = gaps[number][0], gaps[number - 1][0]
    return max(lefts) - min(lefts) <= 6 and previous_gap >= 0 and abs(gap - previous_gap) <= 3


def plain_markdown(page: pymupdf.Page) -> str:
    """The Markdown of a plain page (see the module's docstring)."""
    blocks = sorted(_blocks(page), key=lambda b: (round(b["bbox"][1]), b["bbox"][0]))
    sizes: Counter[int] = Counter()
    for block in blocks:
        for line in block["lines"]:
            for span in line["spans"]:
                sizes[round(span["size"])] += len(span["text"].strip())
    body = sizes.most_common(1)[0][0] if sizes else 0
    blocks = _headings_apart(blocks, body)
    links = [
        (pymupdf.Rect(link["from"]), link["uri"]) for link in page.get_links() if link.get("uri")
    ]
    out = []
    gaps = _gaps(blocks)
    kinds = [
        _kind(block, body, page.rect.height, apart)
        for block, apart in zip(blocks, gaps, strict=True)
    ]
    for number, kind in enumerate(kinds):
        if kind == "footer" and (
            _held(blocks, kinds, gaps, number, body) or _goes_on_a_run(blocks, gaps, number)
        ):
            kinds[number] = "text"
    for block, kind in zip(blocks, kinds, strict=True):
        lines = [_line_text(line, links) for line in block["lines"]]
        if kind == "code":
            out.append("```\n" + "\n".join(code_lines(block["lines"])) + "\n```")
        elif kind in ("header", "footer"):
            out.append(f"<!--running {kind}--> {joined_lines(lines)}")
        elif kind == "heading":
            size = max(round(s["size"]) for line in block["lines"] for s in line["spans"])
            plain = " ".join("".join(s["text"] for s in line["spans"]) for line in block["lines"])
            out.append("#" * (ENCODED + size) + " " + " ".join(plain.split()))
        else:
            out.extend(_paragraphs(lines))
    return "\n\n".join(out) + "\n"


def _paragraphs(lines: list[str]) -> list[str]:
    """A block's lines as paragraphs: bulleted items each on a ``-`` line of their own."""
    found: list[list[str]] = []
    for line in lines:
        if _BULLET.match(line) or not found:
            found.append([_BULLET.sub("- ", line, count=1)])
        else:
            found[-1].append(line)
    return [joined_lines(paragraph) for paragraph in found]
