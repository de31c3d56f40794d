"""A generated web site on 127.0.0.1 (``http.server`` in a thread) for crawl tests: a
robots.txt with a Disallow and a Sitemap, a sitemap index, pages linking each other in and out
of ``/docs/``, a PDF, a broken link, a 500, a slow page, redirects in and out of the site, a
page that changes between crawls (served with an ETag, so a second crawl may get a 304) and a
page that hangs until released. It counts the requests for each path."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bucketdigest.shared.samples import make_pdf


def _page(title: str, *links: str) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    body = (
        f"<p>{title} is a page of the generated test site. It explains one rule of the game "
        "in enough words for a content extractor to keep it as the main text.</p>"
    )
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"{body}<ul>{anchors}</ul></body></html>"
    ).encode()


@dataclass
class GeneratedSite:
    """What the server serves, and what it saw."""

    port: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    not_modified: Counter[str] = field(default_factory=Counter)
    news_edition: int = 1
    released: threading.Event = field(default_factory=threading.Event)
    closing: threading.Event = field(default_factory=threading.Event)
    """Set when the server stops: the slow page, which answers after 3 s, answers then."""
    pdf: bytes = b""

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def docs(self) -> str:
        return f"{self.root}/docs/"

    def pages(self) -> dict[str, bytes]:
        return {
            "/docs/": _page(
                "Index",
                "a.html",
                "b.html#rules",
                "missing.html",
                "boom.html",
                "slow.html",
                "moved.html",
                "away.html",
                "../outside.html",
                "guide.pdf",
                "style.css",
                "http://other.invalid/page.html",
                "mailto:someone@example.org",
                "news.html",
                "hang.html",
            ),
            "/docs/a.html": _page("Alpha", "deep/c.html", "/docs/b.html"),
            "/docs/b.html": _page("Beta", "./"),
            "/docs/deep/c.html": _page("Gamma", "deeper/d.html"),
            "/docs/deep/deeper/d.html": _page("Delta"),
            "/docs/orphan.html": _page("Orphan, only in the sitemap"),
            "/docs/private/secret.html": _page("Secret"),
            "/docs/target.html": _page("Target of a redirect"),
            "/docs/news.html": _page(f"News, edition {self.news_edition}"),
            "/docs/hang.html": _page("Hanging page"),
            "/outside.html": _page("Outside"),
            "/elsewhere.html": _page("Elsewhere"),
            "/docs/guide.pdf": self.pdf,
            "/robots.txt": (
                f"User-agent: *\nDisallow: /docs/private/\nSitemap: {self.root}/sitemap.xml\n"
            ).encode(),
            "/sitemap.xml": (
                '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
                f'sitemap/0.9"><sitemap><loc>{self.docs}pages.xml</loc></sitemap></sitemapindex>'
            ).encode(),
            "/docs/pages.xml": (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                + "".join(
                    f"<url><loc>{self.docs}{name}</loc></url>"
                    for name in ("", "orphan.html", "private/secret.html")
                )
                + "</urlset>"
            ).encode(),
        }


def _handler(site: GeneratedSite) -> type[BaseHTTPRequestHandler]:
    redirects = {"/docs/moved.html": "/docs/target.html", "/docs/away.html": "/elsewhere.html"}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path
            site.hits[path] += 1
            if path == "/docs/boom.html":
                self.send_error(500, "Internal Server Error")
                return
            if path == "/docs/slow.html":
                site.closing.wait(3)  # slower than the crawl's 1 s timeout
            if path == "/docs/hang.html":
                site.released.wait(60)
            if path in redirects:
                self.send_response(301 if path.endswith("moved.html") else 302)
                self.send_header("Location", redirects[path])
                self.end_headers()
                return
            body = site.pages().get(path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
            if self.headers.get("If-None-Match") == etag:
                site.not_modified[path] += 1
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            kind = {"pdf": "application/pdf", "xml": "application/xml", "txt": "text/plain"}
            self.send_response(200)
            self.send_header("Content-Type", kind.get(path.rsplit(".", 1)[-1], "text/html"))
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", etag)
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hung up (a crawler killed, a fetch timed out) is no news."""


@contextmanager
def serve_site() -> Iterator[GeneratedSite]:
    """Serve a fresh test site until the block ends."""
    site = GeneratedSite()
    site.released.set()
    with tempfile.TemporaryDirectory() as folder:
        site.pdf = make_pdf(Path(folder) / "guide.pdf", title="Guide", pages=1, seed=7).read_bytes()
    server = _QuietServer(("127.0.0.1", 0), _handler(site))
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.released.set()
        site.closing.set()
        server.shutdown()
        server.server_close()
