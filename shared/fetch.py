"""Fetching one web page politely: a user agent of our own, robots.txt honoured, a time and a
size limit, redirects followed. Used by the url-crawl digester (and meant for the crawler)."""

from __future__ import annotations

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
    content_type: str
    body: bytes


def check_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL; PermanentDigestError otherwise."""
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise PermanentDigestError(f"not an http(s) URL: {url.strip()[:200]!r}")
    return url.strip()


def _allowed(url: str, settings: FetchSettings) -> bool:
    robots = urllib.robotparser.RobotFileParser(urljoin(url, "/robots.txt"))
    request = urllib.request.Request(robots.url, headers={"User-Agent": settings.user_agent})
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout) as response:
            robots.parse(response.read(512 * 1024).decode("utf-8", "replace").splitlines())
    except urllib.error.HTTPError as exc:
        return exc.code not in (401, 403)  # no robots.txt: everything is allowed
    except (urllib.error.URLError, OSError):
        return True
    return robots.can_fetch(settings.user_agent, url)


def fetch(url: str, settings: FetchSettings) -> FetchedPage:
    """GET ``url``. DigestError (retryable) naming the HTTP status or network error;
    PermanentDigestError when robots.txt forbids it or the page is over the size limit."""
    url = check_url(url)
    if settings.respect_robots and not _allowed(url, settings):
        raise PermanentDigestError(f"robots.txt of {urlparse(url).netloc} disallows {url}")
    request = urllib.request.Request(url, headers={"User-Agent": settings.user_agent})
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
            )
    except urllib.error.HTTPError as exc:
        raise DigestError(f"HTTP {exc.code} {exc.reason} for {url}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DigestError(f"could not fetch {url}: {reason}") from exc
