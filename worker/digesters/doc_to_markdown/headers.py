"""Header levels ranked over the whole document.

pymupdf4llm's layout mode makes a title or section header ``#`` to ``######`` by the rank of
its font size among the header font sizes of the pages it converts at once. We convert a long
document in page ranges, so the same heading size could be ``#`` in one range and ``###`` in
the next, and a page's Markdown would depend on the pages converted with it. So while we
convert, each header carries its font size instead (``#`` repeated ``ENCODED + size`` times),
and once every page is there, sizes are ranked over the whole document the way pymupdf4llm
ranks them (the six largest sizes are levels 1 to 6; smaller ones are 6). A page's Markdown
then depends on the page alone and on that ranking, which is what lets a new revision keep the
Markdown of its unchanged pages (:mod:`keep`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ENCODED = 40
"""Far beyond Markdown's six levels, so no converted text looks like an encoded header."""
_ENCODED_LINE = re.compile(f"^(#{{{ENCODED},}}) ")
_HEADER_LINE = re.compile(r"^#{1,6} ")
_CODE_LINE = re.compile(r"`[^`\n]*[{}\[\]=;%$|][^`\n]*`")
"""A header that is one code span holding braces, brackets or other marks of code
(``\\usepackage{dad}``, ``\\section{Main section}``, ``\\setlength{\\tabcolsep}{3pt}``): the
first line of a listing, which the layout model took for a section header (33 of the
real-world corpus's 2,028 headers, none a heading). A command named alone (``\\OptionNotUsed``,
a term its description follows), a file or a name in code stays a header."""

PageHeaders = list[tuple[int, int]]
"""A page's headers: (line number in its Markdown, font size)."""


def _sizes_as_levels(pages: list[Any], header_fontsizes: set[int]) -> None:
    for page in pages:
        for box in page.boxes:
            if box.boxclass in ("title", "section-header"):
                box.header_level = ENCODED + box.max_fontsize


@contextmanager
def sizes_as_levels() -> Iterator[None]:
    """While converting in layout mode, headers come out as their font sizes."""
    from pymupdf4llm.helpers import document_layout

    ranking = document_layout.update_header_tags
    document_layout.update_header_tags = _sizes_as_levels
    try:
        yield
    finally:
        document_layout.update_header_tags = ranking


def _code_lines_unheaded(page: str) -> str:
    """``page`` with its headers that are a line of code (:data:`_CODE_LINE`) as that line."""
    lines = page.split("\n")
    for number, line in enumerate(lines):
        header = _ENCODED_LINE.match(line)
        if header and _CODE_LINE.fullmatch(line[header.end() :].strip()):
            lines[number] = line[header.end() :]
    return "\n".join(lines)


def rank_headers(pages: list[str]) -> tuple[list[str], list[PageHeaders]]:
    """The pages with their headers' sizes turned into levels, and each page's headers; a
    header that is a line of code is that line."""
    pages = [_code_lines_unheaded(page) for page in pages]
    found: list[PageHeaders] = []
    for page in pages:
        lines = page.split("\n")
        found.append(
            [
                (n, len(m[1]) - ENCODED)
                for n, line in enumerate(lines)
                if (m := _ENCODED_LINE.match(line))
            ]
        )
    sizes = sorted({size for headers in found for _, size in headers}, reverse=True)[:6]
    ranked = []
    for page, headers in zip(pages, found, strict=True):
        lines = page.split("\n")
        for number, size in headers:
            level = sizes.index(size) + 1 if size >= sizes[-1] else 6
            lines[number] = "#" * level + " " + _ENCODED_LINE.sub("", lines[number])
        ranked.append("\n".join(lines))
    return ranked, found


def encode_headers(page: str, headers: PageHeaders) -> str:
    """A ranked page (as a result holds it) back to its sizes form, from its headers."""
    lines = page.split("\n")
    for number, size in headers:
        if number < len(lines):
            lines[number] = "#" * (ENCODED + size) + " " + _HEADER_LINE.sub("", lines[number])
    return "\n".join(lines)
