"""Tables as Markdown where Markdown can hold them, as plain HTML where it cannot.

Layout mode gives every table as an HTML ``<table>`` on a line of its own. A table whose
cells each take one row and one column becomes a Markdown table (its first row the header);
one with a cell spanning rows or columns stays HTML, cut down to the table's own tags and
``rowspan``/``colspan``, so every cell stays under its column header. The web page renders
those tables (sanitised, see ``serve/html.py``); the plain text of search and summaries
takes their cells' text.

A table of one column is no table but framed boxes, one above the other: a form's banner
("CUI (when filled in)") or its "Page 1 of 4", a slide's number, a margin note ("New feature
2020/02/02"), a form's fields, a table of contents in a frame. Each box becomes a paragraph of
its text, so a banner repeated at the top of every page is told as the running line it is, and
a reader sees lines, not a table whose rows have nothing beside them. A table of one row is
boxes side by side with nothing under them: most often a line of code or a numbered equation
the converter cut at its gaps (``|sudo apt remove --purge|<package name>|``, ``|a2 = b2 +
c2|(1)|``); it becomes that line, its cells joined by a space.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_SPANS = ("rowspan", "colspan")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_RULE = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")
_CELL_EDGE = re.compile(r"(?<!\\)\|")
_BLOCK_MARK = re.compile(r"^(?=[#>])")
"""What would make a box's text a heading or a quote once out of its frame (escaped). A
numbered or bulleted box ("7. GRADE/RANK AT DISCHARGE") may read as the list item it looks
like: its text stays as printed."""
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters lxml refuses in a tree ("All strings must be XML compatible")."""


def _text(cell: Any) -> str:
    """A cell's text on one line (``<br>`` became a space before parsing), ``|`` escaped."""
    text = " ".join(cell.text_content().split())
    return text.replace("|", "\\|")


def _spanned(cell: Any) -> bool:
    return any((value := cell.get(name) or "1").isdigit() and int(value) > 1 for name in _SPANS)


def _markdown(rows: list[list[str]]) -> str:
    width = max(len(row) for row in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = ["|" + "|".join(padded[0]) + "|", "|" + "|".join(["---"] * width) + "|"]
    lines += ["|" + "|".join(row) + "|" for row in padded[1:]]
    return "\n".join(lines)


def _html(table: Any) -> str:
    """The table with its structure and text alone (no styles, no other attributes)."""
    parts = ["<table>"]
    for row in table.iter("tr"):
        parts.append("<tr>")
        for cell in row:
            if cell.tag not in ("td", "th"):
                continue
            spans = "".join(
                f' {name}="{value}"'
                for name in _SPANS
                if (value := cell.get(name) or "1").isdigit() and int(value) > 1
            )
            text = html.escape(" ".join(cell.text_content().split()), quote=False)
            parts.append(f"<{cell.tag}{spans}>{text}</{cell.tag}>")
        parts.append("</tr>")
    parts.append("</table>")
    return "".join(parts)


def _converted(match: re.Match[str]) -> str:
    import lxml.html

    source = _NOT_XML.sub(" ", _BREAK.sub(" ", match[0]))
    try:
        table = lxml.html.fragment_fromstring(source)
    except (ValueError, lxml.etree.ParserError):
        return match[0]
    cells = [[c for c in row if c.tag in ("td", "th")] for row in table.iter("tr")]
    cells = [row for row in cells if row]
    if not cells:
        return ""
    if any(_spanned(cell) for row in cells for cell in row):
        return _html(table)
    return _markdown([[_text(cell) for cell in row] for row in cells])


def tables_as_markdown(markdown: str) -> str:
    """``markdown`` with each HTML table as Markdown, or as plain HTML if a cell spans, and
    each table of one column or one row as text (:func:`boxes_as_text`)."""
    return boxes_as_text(_TABLE.sub(_converted, markdown) if "<table" in markdown else markdown)


def boxes_as_text(markdown: str) -> str:
    """``markdown`` with each table of one column (its rows each one cell, no other rule)
    as its cells' text, a paragraph each, and each table of one row as its cells' text on one
    line; empty cells go."""
    lines = markdown.split("\n")
    kept: list[str] = []
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        if end == start:
            kept.append(lines[start])
            end += 1
        elif (texts := _box_texts([line.strip() for line in lines[start:end]])) is None:
            kept += lines[start:end]
        elif boxes := [_BLOCK_MARK.sub("\\\\", text, 1) for text in texts if text]:
            kept.append("\n\n".join(boxes))
        start = end
    return "\n".join(kept)


def _box_texts(rows: list[str]) -> list[str] | None:
    """The texts of a table's boxes: of one row, the row's cells as one line; of one column,
    each cell. None for a table of several rows and columns, or lines that are no table."""
    if len(rows) < 2 or not _RULE.fullmatch(rows[1]):
        return None
    table = [_cells(row) for number, row in enumerate(rows) if number != 1]
    if len(table) == 1:
        return [" ".join(text for text in table[0] if text)]
    if len(_cells(rows[1])) != 1 or any(_RULE.fullmatch(row) for row in rows[2:]):
        return None
    return [row[0] for row in table] if all(len(row) == 1 for row in table) else None


def _cells(row: str) -> list[str]:
    """The text of each cell of a table row (``\\|`` is a pipe inside one; the row's outer
    pipes may be left out, as Markdown allows)."""
    inner = row.strip().removeprefix("|")
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _CELL_EDGE.split(inner)]


@contextmanager
def html_tables_where_the_layout_has_them() -> Iterator[None]:
    """While converting, pages whose layout holds no table skip the HTML table engine, which
    otherwise searches every page for tables (a fifth of the converter's time here)."""
    from pymupdf4llm.helpers import table_html

    engine = table_html.page_html_tables

    def tables(page: Any) -> list[Any]:
        boxes = getattr(page, "layout_information", None) or []
        if not any(isinstance(b, dict) and b.get("class_name") == "table" for b in boxes):
            return []
        return list(engine(page))

    table_html.page_html_tables = tables
    try:
        yield
    finally:
        table_html.page_html_tables = engine
