"""HTML pages to Markdown: the main content (navigation, footers and other boilerplate left
out) with its headings, links and tables, by trafilatura; the page's title, URL (canonical
link or ``og:url``), author, date and site name go to ``info.json``'s metadata.

Before trafilatura sees the page, its site furniture goes: the anchors documentation
generators put in headings (Sphinx's ``¶``, ``#``, ``§``) and links from a heading to itself.
Code blocks are set aside and put back byte for byte (trafilatura drops their blank lines).
Relative links are made absolute from the page's URL, or left as plain text when it has none,
so no link in a result points at a file the result does not hold.
"""

from __future__ import annotations

import re
from typing import Any

from bucketdigest.shared.errors import PermanentDigestError

_METADATA = ("title", "url", "author", "date", "sitename", "description")
_ANCHOR_SYMBOLS = {"", "¶", "#", "§", "🔗", "link", "permalink"}
_HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]
_CODE_MARK = "bucketdigestcodeblock{:04d}"


def _drop_heading_anchors(tree: Any) -> None:
    for heading in tree.iter(*_HEADINGS):
        for link in list(heading.iter("a")):
            href = link.get("href") or ""
            if not href.startswith("#"):
                continue
            if " ".join(link.text_content().split()).casefold() in _ANCHOR_SYMBOLS:
                link.drop_tree()
            else:
                link.drop_tag()


def _resolve_links(tree: Any, base_url: str | None) -> None:
    if base_url:
        tree.make_links_absolute(base_url, resolve_base_href=True)
    for link in list(tree.iter("a")):
        href = link.get("href") or ""
        if not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.IGNORECASE):
            link.drop_tag()


def _set_code_aside(tree: Any) -> dict[str, str]:
    """Each ``<pre>``'s text, by the mark left in its place."""
    blocks = {}
    for number, pre in enumerate(tree.iter("pre")):
        mark = _CODE_MARK.format(number)
        blocks[mark] = pre.text_content().strip("\n")
        for child in list(pre):
            pre.remove(child)
        pre.text = None
        code = pre.makeelement("code", {})
        code.text = f"{mark}\n{mark}"  # two lines: trafilatura fences a block of several
        pre.append(code)
    return blocks


def html_to_markdown(data: bytes, base_url: str | None = None) -> tuple[str, dict[str, Any]]:
    """Markdown of the page's main content and its metadata; PermanentDigestError naming
    the reason when there is none to take (not HTML, or no text). ``base_url``: where the
    page was fetched from (else its canonical URL, if it names one)."""
    import trafilatura
    from trafilatura.utils import load_html

    if not data.strip():
        raise PermanentDigestError("the file is empty")
    if b"\x00" in data[:4096]:
        raise PermanentDigestError("not an HTML page: it holds binary data")
    tree = load_html(data)
    if tree is None:
        raise PermanentDigestError("not an HTML page: it cannot be parsed")
    _drop_heading_anchors(tree)
    found = trafilatura.extract_metadata(tree)
    metadata = {}
    if found is not None:
        metadata = {name: value for name in _METADATA if (value := getattr(found, name, None))}
    _resolve_links(tree, base_url or metadata.get("url"))
    code = _set_code_aside(tree)
    markdown = trafilatura.extract(
        tree,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        favor_recall=True,
    )
    if not markdown or not markdown.strip():
        raise PermanentDigestError("not an HTML page with readable content: no text was found")
    for mark, text in code.items():
        markdown = markdown.replace(f"{mark}\n{mark}", text)
    return markdown.strip() + "\n", metadata
