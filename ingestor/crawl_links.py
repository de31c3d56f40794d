"""URLs a crawl finds: the links of an HTML page (``<a href>`` and ``<area href>``, resolved
against the page's URL and ``<base href>``; none when the page says ``nofollow``), and the page
URLs a sitemap lists (``<urlset>``, or a ``<sitemapindex>`` of more sitemaps; gzip or not)."""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from urllib.parse import urljoin

import lxml.html
from lxml.etree import ParserError

_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def page_links(body: bytes, url: str) -> list[str]:
    """The absolute link targets of the page at ``url``, in document order."""
    if not body.strip():
        return []
    try:
        tree = lxml.html.fromstring(body, base_url=url)
    except (ParserError, ValueError):
        return []
    for meta in tree.iter("meta"):
        if (meta.get("name") or "").lower() == "robots" and "nofollow" in (
            meta.get("content") or ""
        ).lower():
            return []
    base = next((b.get("href") for b in tree.iter("base") if b.get("href")), None)
    root = urljoin(url, base) if base else url
    links = []
    for element in tree.iter("a", "area"):
        href = (element.get("href") or "").strip()
        if href and not href.startswith(("javascript:", "mailto:", "tel:", "data:")):
            links.append(urljoin(root, href))
    return links


def read_sitemap(body: bytes) -> tuple[list[str], list[str]]:
    """``(page URLs, sitemap URLs)`` a sitemap lists; both empty when it is not one."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError):
            return [], []
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return [], []
    locations = [
        (loc.text or "").strip() for loc in root.iter(f"{_SITEMAP_NS}loc") if loc.text
    ] or [(loc.text or "").strip() for loc in root.iter("loc") if loc.text]
    if root.tag.endswith("sitemapindex"):
        return [], locations
    if root.tag.endswith("urlset"):
        return locations, []
    return [], []
