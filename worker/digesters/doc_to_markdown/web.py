"""HTML pages to Markdown: the main content (navigation, footers and other boilerplate left
out) with its headings, links and tables, by trafilatura; the page's title, URL (canonical
link or ``og:url``), author, date and site name go to ``info.json``'s metadata."""

from __future__ import annotations

from typing import Any

from bucketdigest.shared.errors import PermanentDigestError

_METADATA = ("title", "url", "author", "date", "sitename", "description")


def html_to_markdown(data: bytes) -> tuple[str, dict[str, Any]]:
    """Markdown of the page's main content and its metadata; PermanentDigestError naming
    the reason when there is none to take (not HTML, or no text)."""
    import trafilatura

    if not data.strip():
        raise PermanentDigestError("the file is empty")
    if b"\x00" in data[:4096]:
        raise PermanentDigestError("not an HTML page: it holds binary data")
    markdown = trafilatura.extract(
        data,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        favor_recall=True,
    )
    if not markdown or not markdown.strip():
        raise PermanentDigestError("not an HTML page with readable content: no text was found")
    found = trafilatura.extract_metadata(data)
    metadata = {}
    if found is not None:
        metadata = {name: value for name in _METADATA if (value := getattr(found, name, None))}
    return markdown.strip() + "\n", metadata
