"""Markdown and snippets as safe HTML.

Text in documents is untrusted: a PDF may well contain ``<script>``. Markdown is rendered with
raw HTML disabled (markdown-it escapes it), then sanitised by nh3 (ammonia) as a second wall;
pages may only show the result's own images.
"""

from __future__ import annotations

import functools
import re
import secrets

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from bucketdigest.search.snippet import Snippet
from bucketdigest.shared.result import IMAGES_DIR

_IMAGE_LINK = re.compile(r"\]\((?:\.\./)?" + IMAGES_DIR + "/")


@functools.cache
def _markdown_it() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def files_url(digest: str) -> str:
    """Where the server gives out the members of ``digest``'s result, ending in ``/``."""
    return f"/api/documents/{digest}/files/"


def served_markdown(markdown: str, files: str) -> str:
    """A page or ``document.md`` with its image links (``../images/`` or ``images/``, relative
    to the member) turned into links to the file route ``files``, so they resolve over HTTP."""
    return _IMAGE_LINK.sub(f"]({files}{IMAGES_DIR}/", markdown)


_HTML_TABLE = re.compile(r"^<table>.*</table>[ \t]*$", re.MULTILINE)
"""A table whose cells span rows or columns: the converter keeps it as HTML on one line."""
_TABLE_TAGS = {"table", "thead", "tbody", "tr", "th", "td"}
_SPANS = {"rowspan", "colspan"}


def markdown_html(markdown: str, files: str) -> Markup:
    """``markdown`` as sanitised HTML; its image links point into ``files`` (the
    document's files, ending in ``/``). A table the converter kept as HTML is rendered as a
    table, with nothing but table tags and spans left in it; any other HTML is shown as
    text."""
    tables: list[str] = []
    mark = f"bucketdigest-table-{secrets.token_hex(8)}-"

    def aside(match: re.Match[str]) -> str:
        tables.append(match[0])
        return f"\n\n{mark}{len(tables) - 1}\n\n"

    text = _HTML_TABLE.sub(aside, served_markdown(markdown, files))
    html = nh3.clean(_markdown_it().render(text), url_schemes={"http", "https", "mailto"})
    for number, table in enumerate(tables):
        safe = nh3.clean(table, tags=_TABLE_TAGS, attributes={"th": _SPANS, "td": _SPANS})
        html = html.replace(f"<p>{mark}{number}</p>", safe)
    return Markup(html)


def snippet_html(snippet: Snippet) -> Markup:
    """The snippet with the query's words in ``<mark>``, everything else escaped."""
    parts: list[str] = []
    position = 0
    for start, end in snippet.highlights:
        parts.append(str(escape(snippet.text[position:start])))
        parts.append(f"<mark>{escape(snippet.text[start:end])}</mark>")
        position = end
    parts.append(str(escape(snippet.text[position:])))
    return Markup("".join(parts))
