"""Running headers, footers and page numbers: out of the page's text, kept beside it.

Two signs find them. The layout model classes boxes as ``page-header`` / ``page-footer``: while
converting, such a box's text is kept on a line of its own behind a marker
(:func:`marked_page`). And in a document of several pages, a line at the top or bottom of
many pages that is the same but for its digits ("Journal of X, 12 (2021) 345", "Downloaded
from ... on 3 May 2024") is one too, whatever the engine; so is a page number alone there.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bucketdigest.shared.pagetext import has_text

_KINDS = {"page-header": "header", "page-footer": "footer"}
_MARKER = re.compile(r"^<!--running (header|footer)--> ?(.*)$")
_HEADING_MARK = re.compile(r"^#+ +")
"""A heading's mark (while converting, ``#`` repeated as often as its font size says): a
running line is no heading, so it keeps its words only."""
EDGE_LINES = 2
"""Lines at each end of a page where a running head or foot may stand."""
REPEATED_SHARE = 0.25
"""A line at a page's edge on at least this share of pages (and two) is a running one."""
LONGEST = 200
_ROMAN = r"(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_PAGE_NUMBER = re.compile(
    rf"(?:page|p\.|seite|página|pagina)?\s*[-\u2013\u2014(]?\s*(?:0|{_ROMAN})\s*[-\u2013\u2014)]?"
    r"(?:\s*(?:of|/|von|de)\s*0)?"
)
"""A page number, its digits as ``0``: ``12``, ``- 12 -``, ``xiv``, ``Page 3 of 10``."""


@dataclass(frozen=True)
class Running:
    """What stood above and below one page's text."""

    header: list[str] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[str]]:
        return {"header": self.header, "footer": self.footer}


def marked_page(chunk: Mapping[str, Any]) -> str:
    """A pymupdf4llm page chunk's text with each page-header or page-footer box on a marked
    line of its own (:func:`split_running` takes them out)."""
    text: str = chunk["text"]
    pieces, last = [], 0
    for box in chunk.get("page_boxes") or ():
        kind = _KINDS.get(box["class"])
        start, stop = box["pos"]
        if kind is None or start < last:
            continue
        pieces.append(text[last:start])
        if segment := " ".join(text[start:stop].split()):
            pieces.append(f"\n\n<!--running {kind}--> {segment}\n\n")
        last = stop
    pieces.append(text[last:])
    return "".join(pieces)


def with_running(page: str, running: Mapping[str, list[str]]) -> str:
    """A page as the converter gave it, from its text and its running lines (as a result's
    ``pages.json`` keeps them): what a new revision keeps of an unchanged page."""
    header = [f"<!--running header--> {line}" for line in running.get("header", [])]
    footer = [f"<!--running footer--> {line}" for line in running.get("footer", [])]
    return "\n\n".join([*header, page, *footer])


def _plain(line: str) -> str:
    """A line without its Markdown, case folded, its white space single."""
    return " ".join(re.sub(r"[#*_`>]+", " ", line).casefold().split())


def _key(line: str) -> str:
    """A line as compared across pages: :func:`_plain`, without a number at its start or end
    (where page numbers stand: a foot with its page number on the same line is the foot of
    the pages that set the number apart); numbers inside it must be equal."""
    return re.sub(r"^\d+\b\s*|\s*\b\d+$", "", _plain(line))


def _is_heading(line: str) -> bool:
    """A heading: marked as one, or a line in bold alone."""
    return line[:1] == "#" or bool(re.fullmatch(r"\*\*[^*].*\*\*", line.strip()))


def is_page_number(line: str) -> bool:
    """Whether ``line`` is a page number alone (``12``, ``- 12 -``, ``xiv``, ``Page 3 of 10``)."""
    return bool(_PAGE_NUMBER.fullmatch(re.sub(r"\d+", "0", _plain(line))))


def _edges(lines: list[str]) -> tuple[list[int], list[int]]:
    """Where the first and last few lines of text stand (tables and images are not heads)."""
    texts = [n for n, line in enumerate(lines) if line.strip()]
    usable = [
        n
        for n in texts
        if not lines[n].lstrip().startswith(("|", "![")) and len(lines[n]) < LONGEST
    ]
    top = [n for n in texts[:EDGE_LINES] if n in usable]
    bottom = [n for n in texts[-EDGE_LINES:] if n in usable and n not in top]
    return top, bottom


def split_running(pages: list[str], keep: bool = False) -> tuple[list[str], list[Running]]:
    """Each page without its running lines, and those lines by page. With ``keep`` the
    marked boxes stay in the text (unmarked) and nothing else is taken out. A page number
    alone at a page's edge goes even in a document of one page."""
    marked = [_take_marked(page, keep) for page in pages]
    bodies = [body for body, _ in marked]
    running = [found for _, found in marked]
    if keep:
        return bodies, running
    edges = [_edges(body.split("\n")) for body in bodies]
    counts: Counter[tuple[bool, str]] = Counter()
    as_text: set[tuple[bool, str]] = set()
    for body, (top, bottom), found in zip(bodies, edges, running, strict=True):
        lines = body.split("\n")
        keys = {(n in top, _key(lines[n])) for n in top + bottom}
        as_text |= {(n in top, _key(lines[n])) for n in top + bottom if not _is_heading(lines[n])}
        keys |= {(True, _key(line)) for line in found.header}
        keys |= {(False, _key(line)) for line in found.footer}
        counts.update(keys)
    needed = max(2, math.ceil(REPEATED_SHARE * len(pages)))
    repeated = {key for key, count in counts.items() if count >= needed and key[1]}
    result = []
    for number, (body, (top, bottom)) in enumerate(zip(bodies, edges, strict=True)):
        lines = body.split("\n")
        gone = set()
        own = {_key(line) for line in running[number].header + running[number].footer}
        for n in top + bottom:
            key = _key(lines[n])
            if _is_heading(lines[n]) and key and ((n in top, key) in as_text or key in own):
                continue  # a title whose words run as the other pages' heads (or this one's)
            if (n in top, key) in repeated or is_page_number(lines[n]):
                gone.add(n)
                side = running[number].header if n in top else running[number].footer
                side.append(_HEADING_MARK.sub("", lines[n].strip()))
        result.append("\n".join(line for n, line in enumerate(lines) if n not in gone).strip())
    return result, running


def _take_marked(page: str, keep: bool) -> tuple[str, Running]:
    """The page without its marked boxes, and those boxes. A page whose only text is in such
    boxes keeps it: the model takes a lone line at the top of a page for a header."""
    running = Running()
    lines = []
    for line in page.split("\n"):
        match = _MARKER.match(line)
        if match is None:
            lines.append(line)
        elif keep:
            lines.append(match[2])
        else:
            side = running.header if match[1] == "header" else running.footer
            side.append(_HEADING_MARK.sub("", match[2]))
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if not keep and not has_text(body) and (running.header or running.footer):
        return _take_marked(page, keep=True)[0], Running()
    return body, running
