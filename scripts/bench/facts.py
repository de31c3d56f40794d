"""Machine-checkable facts about one page, in the form public page-level OCR benchmarks use
(olmOCR-Bench's ``present``, ``absent``, ``order`` and ``table`` tests, with its text
normalisation), checked against a page's Markdown or plain text.

A fact is a JSON object: ``doc`` (the corpus file's path inside its archive,
``generated/NAME`` for a page ``fidelity_pages.py`` makes, or ``derived/NAME`` for a scan with a
text layer ``sandwiches.py`` makes), ``page`` (1-based), ``type``, ``added`` (the round of work
that added it, to report each set apart; none for the first rounds), ``feature`` (optional: the
kind of page an issue names, such as "column breaks", reported apart), and

- ``present`` / ``absent``: ``text``, matched fuzzily (``max_diffs`` edits allowed, default 0),
  case-sensitively unless ``case_sensitive`` is false;
- ``order``: ``before`` and ``after``, both found, ``before`` first;
- ``table``: ``cell`` found in some table, and each of ``top_heading`` (the cell at the top
  of its column), ``left_heading`` (the first cell of its row), ``left``, ``right``, ``up``,
  ``down`` (its neighbours) given equal (normalised) to what the table has there.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

_REPLACEMENTS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\uff3f": "_",
    "\u2013": "-",
    "\u2014": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2212": "-",
    "\u00b5": "\u03bc",
}
"""Typographic quotes, dashes and the like as their ASCII forms (olmOCR-Bench's list)."""


def normalize(text: str) -> str:
    """olmOCR-Bench's normalisation: ``<br>`` and white space folded, bold and italics
    dropped, NFC, typographic quotes and dashes as ASCII."""
    text = re.sub(r"<br/?>", " ", text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\*\*(.*?)\*\*", r"\1", text)
    text = re.sub(r"__(.*?)__", r"\1", text)
    text = re.sub(r"</?[bi]>", "", text)
    text = re.sub(r"\*(.*?)\*", r"\1", text)
    text = re.sub(r"_(.*?)_", r"\1", text)
    text = unicodedata.normalize("NFC", text)
    for fancy, plain in _REPLACEMENTS.items():
        text = text.replace(fancy, plain)
    return text


@dataclass(frozen=True)
class Outcome:
    passed: bool
    why: str = ""


def _threshold(text: str, max_diffs: int) -> float:
    return 1.0 - max_diffs / max(1, len(text))


def _found(needle: str, haystack: str, max_diffs: int, case_sensitive: bool = True) -> float:
    if not case_sensitive:
        needle, haystack = needle.lower(), haystack.lower()
    return fuzz.partial_ratio(needle, haystack) / 100.0


def _presence(fact: dict[str, Any], content: str) -> Outcome:
    text = normalize(fact["text"])
    diffs = int(fact.get("max_diffs", 0))
    ratio = _found(text, normalize(content), diffs, fact.get("case_sensitive", True))
    present = ratio >= _threshold(text, diffs)
    if fact["type"] == "present":
        return Outcome(present, "" if present else f"best match {ratio:.3f}")
    return Outcome(not present, f"found ({ratio:.3f})" if present else "")


def _position(needle: str, haystack: str, max_diffs: int) -> int | None:
    alignment = fuzz.partial_ratio_alignment(needle, haystack)
    if alignment is None or alignment.score / 100.0 < _threshold(needle, max_diffs):
        return None
    return int(alignment.dest_start)


def _order(fact: dict[str, Any], content: str) -> Outcome:
    text = normalize(content)
    diffs = int(fact.get("max_diffs", 0))
    before = _position(normalize(fact["before"]), text, diffs)
    after = _position(normalize(fact["after"]), text, diffs)
    if before is None or after is None:
        return Outcome(False, "before not found" if before is None else "after not found")
    return Outcome(before < after, "" if before < after else "after comes first")


Table = list[list[str]]


def _markdown_tables(content: str) -> list[Table]:
    tables: list[Table] = []
    rows: Table = []
    for line in [*content.split("\n"), ""]:
        stripped = line.strip()
        if stripped.startswith("|"):
            inner = stripped[1:-1] if stripped.endswith("|") else stripped[1:]
            cells = [c.strip() for c in inner.split("|")]
            if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _html_tables(content: str) -> list[Table]:
    """HTML tables as grids, a cell spanning rows or columns repeated in each."""
    from bs4 import BeautifulSoup

    tables = []
    for element in BeautifulSoup(content, "html.parser").find_all("table"):
        grid: dict[tuple[int, int], str] = {}
        for r, row in enumerate(element.find_all("tr")):
            c = 0
            for cell in row.find_all(["td", "th"]):
                while (r, c) in grid:
                    c += 1
                text = " ".join(cell.get_text(" ").split())
                for dr in range(int(cell.get("rowspan", 1) or 1)):
                    for dc in range(int(cell.get("colspan", 1) or 1)):
                        grid[(r + dr, c + dc)] = text
                c += int(cell.get("colspan", 1) or 1)
        if grid:
            height = max(r for r, _ in grid) + 1
            width = max(c for _, c in grid) + 1
            tables.append([[grid.get((r, c), "") for c in range(width)] for r in range(height)])
    return tables


_NEIGHBOURS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def _same(a: str, b: str) -> bool:
    return normalize(a).strip() == normalize(b).strip()


def _table(fact: dict[str, Any], content: str) -> Outcome:
    tables = _markdown_tables(content) + _html_tables(content)
    if not tables:
        return Outcome(False, "no table")
    cell = normalize(fact["cell"]).strip()
    seen = False
    for grid in tables:
        for r, row in enumerate(grid):
            for c, value in enumerate(row):
                if normalize(value).strip() != cell:
                    continue
                seen = True
                checks = []
                for name, (dr, dc) in _NEIGHBOURS.items():
                    if fact.get(name):
                        rr, cc = r + dr, c + dc
                        inside = 0 <= rr < len(grid) and 0 <= cc < len(grid[rr])
                        checks.append(inside and _same(grid[rr][cc], fact[name]))
                if fact.get("top_heading"):
                    column = [row[c] for row in grid[:r] if c < len(row) and row[c].strip()]
                    checks.append(bool(column) and _same(column[0], fact["top_heading"]))
                if fact.get("left_heading"):
                    before = [value for value in row[:c] if value.strip()]
                    checks.append(bool(before) and _same(before[0], fact["left_heading"]))
                if all(checks):
                    return Outcome(True)
    return Outcome(False, "cell found, relations differ" if seen else "cell not found")


def check(fact: dict[str, Any], content: str) -> Outcome:
    """Whether ``content`` (a page's Markdown or text) holds ``fact``."""
    kind = fact["type"]
    if kind in ("present", "absent"):
        return _presence(fact, content)
    if kind == "order":
        return _order(fact, content)
    if kind == "table":
        return _table(fact, content)
    raise ValueError(f"unknown fact type {kind!r}")
