"""Which URLs a site crawl takes: those under the start URL's folder (``https://x.org/docs/``
for ``https://x.org/docs/`` or ``https://x.org/docs/index.html``), passing the include and
exclude globs, whose path does not name a file type bucketdigest leaves alone (images, style
sheets, scripts...). URLs are compared in one normal form."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from urllib.parse import urldefrag, urlsplit, urlunsplit

from bucketdigest.shared.filetypes import FileKind, file_type

PAGE_EXTENSIONS = frozenset({"html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp"})
"""Path endings of pages served as HTML."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """One spelling per URL: no fragment, lowercase scheme and host, no default port, ``/``
    for an empty path."""
    parts = urlsplit(urldefrag(url.strip())[0])
    host = (parts.hostname or "").lower()
    if parts.port and parts.port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path or "/", parts.query, ""))


def site_prefix(start: str) -> str:
    """The folder of the start URL: what a URL must begin with to be in the site."""
    url = normalize_url(start)
    scheme, host, path, _, _ = urlsplit(url)
    return urlunsplit((scheme, host, path[: path.rfind("/") + 1], "", ""))


def url_ext(url: str) -> str:
    """The extension of the URL's last path segment (``""`` when it has none)."""
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


@dataclass(frozen=True)
class CrawlScope:
    """The crawl's limits on which URLs it takes."""

    prefix: str
    exts: frozenset[str]
    """File types taken besides HTML pages (the ingest's ``--ext``)."""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None

    def takes(self, url: str, depth: int) -> bool:
        """Whether ``url`` (normalized), found ``depth`` links away from the start, is in."""
        if not url.startswith(self.prefix) or urlsplit(url).scheme not in ("http", "https"):
            return False
        if self.max_depth is not None and depth > self.max_depth:
            return False
        ext = url_ext(url)
        if ext and ext not in PAGE_EXTENSIONS and ext not in self.exts:
            return False
        if self.include and not any(fnmatch.fnmatchcase(url, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(url, p) for p in self.exclude)

    def takes_type(self, ext: str) -> bool:
        """Whether content stored under ``ext`` (from its Content-Type) is taken."""
        return ext in self.exts or file_type(ext).kind is FileKind.WEB
