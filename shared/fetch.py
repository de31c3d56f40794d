"""Fetching web pages politely: a user agent of our own, robots.txt honoured (read once per
site), a time and a size limit, redirects followed, conditional requests (ETag and
Last-Modified, so an unchanged page costs no body), and at most so many requests a second per
host. Used by the url-crawl digester and the site crawler."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
import urllib.robotparser
from dataclasses import dataclass
from urllib.parse import urljoin, urlparse

from bucketdigest.shared.errors import DigestError, PermanentDigestError

USER_AGENT = "bucketdigest/0.1 (+https://github.com/bucketdigest)"


@dataclass(frozen=True)
class FetchSettings:
    user_agent: str = USER_AGENT
    timeout: float = 30.0
    max_bytes: int = 20 * 1024 * 1024
    respect_robots: bool = True


@dataclass(frozen=True)
class FetchedPage:
    url: str
    final_url: str
    status: int
    """200, or 304 when a conditional request found the page unchanged (``body`` empty)."""
    content_type: str
    body: bytes
    etag: str = ""
    last_modified: str = ""


class FetchError(DigestError):
    """A page that could not be fetched; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def check_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL; PermanentDigestError otherwise."""
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise PermanentDigestError(f"not an http(s) URL: {url.strip()[:200]!r}")
    return url.strip()


class Robots:
    """The robots.txt rules of the sites asked about, each read once (thread-safe)."""

    def __init__(self, settings: FetchSettings) -> None:
        self.settings = settings
        self._parsers: dict[str, urllib.robotparser.RobotFileParser | None] = {}
        self._lock = threading.Lock()

    def _parser(self, url: str) -> urllib.robotparser.RobotFileParser | None:
        """The site's rules; None when it has none (everything allowed) or forbids robots.txt
        itself (401/403: nothing allowed is signalled by ``disallow_all``)."""
        origin = urljoin(url, "/")
        with self._lock:
            if origin not in self._parsers:
                self._parsers[origin] = self._read(urljoin(origin, "robots.txt"))
            return self._parsers[origin]

    def _read(self, robots_url: str) -> urllib.robotparser.RobotFileParser | None:
        parser = urllib.robotparser.RobotFileParser(robots_url)
        request = urllib.request.Request(
            robots_url, headers={"User-Agent": self.settings.user_agent}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout) as response:
                parser.parse(response.read(512 * 1024).decode("utf-8", "replace").splitlines())
        except urllib.error.HTTPError as exc:
            if exc.code not in (401, 403):
                return None
            parser.disallow_all = True
        except (urllib.error.URLError, OSError):
            return None
        return parser

    def allows(self, url: str) -> bool:
        parser = self._parser(url)
        return parser is None or parser.can_fetch(self.settings.user_agent, url)

    def crawl_delay(self, url: str) -> float:
        parser = self._parser(url)
        delay = parser.crawl_delay(self.settings.user_agent) if parser is not None else None
        return float(delay or 0)

    def sitemaps(self, url: str) -> list[str]:
        parser = self._parser(url)
        return list((parser.site_maps() if parser is not None else None) or [])


class HostThrottle:
    """At most ``rate`` requests a second to each host, across threads."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, url: str, min_interval: float = 0.0) -> None:
        host = urlparse(url).netloc
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next.get(host, now))
            self._next[host] = slot + max(self.interval, min_interval)
        time.sleep(max(0.0, slot - now))


def fetch(
    url: str,
    settings: FetchSettings,
    robots: Robots | None = None,
    *,
    etag: str = "",
    last_modified: str = "",
) -> FetchedPage:
    """GET ``url`` (conditionally, given the ``etag`` or ``last_modified`` of a copy).
    FetchError (retryable) naming the HTTP status or network error; PermanentDigestError when
    robots.txt forbids it or the page is over the size limit."""
    url = check_url(url)
    robots = robots or Robots(settings)
    if settings.respect_robots and not robots.allows(url):
        raise PermanentDigestError(f"robots.txt of {urlparse(url).netloc} disallows {url}")

    # a conditional GET when a copy is known, read up to the size limit
    headers = {"User-Agent": settings.user_agent}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout) as response:
            body = response.read(settings.max_bytes + 1)
            if len(body) > settings.max_bytes:
                raise PermanentDigestError(
                    f"{url} is larger than the {settings.max_bytes:,}-byte limit"
                )
            return FetchedPage(
                url=url,
                final_url=response.geturl(),
                status=response.status,
                content_type=response.headers.get_content_type(),
                body=body,
                etag=response.headers.get("ETag", ""),
                last_modified=response.headers.get("Last-Modified", ""),
            )
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return FetchedPage(url, exc.geturl() or url, 304, "", b"", etag, last_modified)
        raise FetchError(f"HTTP {exc.code} {exc.reason} for {url}", exc.code) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"could not fetch {url}: {reason}") from exc
