"""url-crawl: the page a link file points to (``.url``, ``.webloc``, or a text file holding
one URL alone), fetched and kept as Markdown (its main content) and HTML. Its text joins the
document's pages for tags, summary and search. A dead link fails with the HTTP status and is
tried again on the document's later attempts."""

from __future__ import annotations

import re

from bucketdigest.shared.fetch import FetchSettings, fetch
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.result import web_member, web_page_member
from bucketdigest.worker.digester import DigestContext, Digester, Produced

_LONE_URL = re.compile(r"\s*(https?://\S+)\s*")
_INI_URL = re.compile(r"^\s*URL\s*=\s*(\S+)\s*$", re.MULTILINE | re.IGNORECASE)
_PLIST_URL = re.compile(r"<key>\s*URL\s*</key>\s*<string>([^<]+)</string>", re.IGNORECASE)


def link_target(text: str, ext: str) -> str | None:
    """The URL a link file points to: a ``.url`` shortcut's ``URL=``, a ``.webloc``'s URL
    key, or a text file whose whole content is one URL; None when there is none."""
    if ext == "url":
        found = _INI_URL.search(text)
    elif ext == "webloc":
        found = _PLIST_URL.search(text)
    else:
        found = _LONE_URL.fullmatch(text)
    return found.group(1).strip() if found else None


class UrlCrawl(Digester):
    name = "url-crawl"
    label = "Linked page"
    description = (
        "Fetches the page a link file points to (.url, .webloc, or a text file holding one "
        "URL) and keeps its main content as Markdown and its HTML."
    )
    version = "1"
    outputs = ("web-page",)
    kinds = frozenset({FileKind.LINK, FileKind.TEXT})

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        from bucketdigest.worker.digesters.doc_to_markdown.web import html_to_markdown

        text = ctx.source.read_bytes().decode("utf-8", "replace")
        url = link_target(text, ctx.file.ext)
        if url is None:  # a text file that is not a link: nothing to fetch
            return {"web-page": Produced({}, {"url": None})}
        page = fetch(url, FetchSettings(private_networks=ctx.settings.fetch_private_networks))
        markdown, metadata = html_to_markdown(page.body, page.final_url)
        content = {
            "url": url,
            "final_url": page.final_url,
            "status": page.status,
            "content_type": page.content_type,
            "metadata": metadata,
        }
        files = {
            web_member(1): markdown.encode(),
            web_page_member(1): page.body,
        }
        return {"web-page": Produced(files, content)}
