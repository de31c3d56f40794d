"""Fetching web pages politely: a user agent of our own, robots.txt honoured (read once per
site), a time and a size limit, redirects followed, conditional requests (ETag and
Last-Modified, so an unchanged page costs no body), and at most so many requests a second per
host. Used by the url-crawl digester, the drop-in APIs' URL sources and the site crawler.

A URL can come from anyone who can add a document (a link file, a ``/v1/convert/source``
request), and the machine that fetches it sits inside the fleet's network: it can reach a
cloud's metadata service (its credentials), the store, the broker, other services. So unless
:attr:`FetchSettings.private_networks` allows it, only addresses on the public internet are
fetched: every host is resolved and refused when any of its addresses is not global
(loopback, a private network, link-local, shared, reserved), before each request and each
redirect, and a direct connection goes to an address checked at that moment (a name that
resolves elsewhere the second time gets nowhere).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import threading
import time
import urllib.error
import urllib.request
import urllib.robotparser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlparse

from bucketdigest.shared.errors import DigestError, PermanentDigestError

USER_AGENT = "bucketdigest/0.1 (+https://github.com/bucketdigest)"


@dataclass(frozen=True)
class FetchSettings:
    user_agent: str = USER_AGENT
    timeout: float = 30.0
    """The longest wait for the server to connect or to send more."""
    max_seconds: float = 300.0
    """The longest a whole answer may take to arrive (a server that trickles it out a byte at
    a time stays within ``timeout`` at each read)."""
    max_bytes: int = 20 * 1024 * 1024
    respect_robots: bool = True
    private_networks: bool = False
    """Whether addresses outside the public internet (an intranet, this machine) may be
    fetched: for URLs the operator names, never for ones a document or a client brings."""


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


class RefusedUrl(OSError):
    """A URL not fetched: its host is (or resolves to) an address off the public internet, or
    a redirect leads to one that is not http(s)."""


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known prefix of NAT64 gateways, which reach the IPv4 address in the last 32 bits."""


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's client, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_kind(text: str) -> str | None:
    """What keeps ``text`` (an IP address) off the public internet, or None when it is on it."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None and (kind := address_kind(str(embedded))) is not None:
            return kind
    if address.is_loopback:
        return "this machine (loopback)"
    if address.is_link_local:
        return "link-local (where cloud metadata services answer)"
    if address.is_multicast:
        return "multicast"
    if not address.is_global:
        return "a private or reserved network"
    return None


def public_addresses(host: str, port: int) -> list[tuple[Any, ...]]:
    """``getaddrinfo``'s stream addresses of ``host``; RefusedUrl when any of them is not
    on the public internet (a name with one private address is refused whole: the connection
    could go to either)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        raise RefusedUrl(f"{host[:100]!r} is not a host name: {exc}") from None
    for info in found:
        address = str(info[4][0])
        if (kind := address_kind(address)) is not None:
            shown = host if host == address else f"{host} ({address})"
            raise RefusedUrl(
                f"{shown} is {kind}, off the public internet: not fetched, since a link or a "
                "request could otherwise reach the fleet's own network (the bucket setting "
                "fetch_private_networks allows it)"
            )
    return found


def _connected(
    host: str, port: int, timeout: Any, source_address: tuple[str, int] | None
) -> socket.socket:
    """A socket connected to one of ``host``'s addresses, each checked now."""
    problem: OSError = OSError(f"{host} has no address")
    for family, kind, proto, _, address in public_addresses(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            problem = exc
    raise problem


class _CheckedConnection(http.client.HTTPConnection):
    """A connection made to an address checked when it is made; through a proxy's tunnel
    (``_tunnel_host``) the proxy is the operator's and the host was checked by name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = self._checked

    def _checked(
        self, address: tuple[str, int], timeout: Any, source_address: Any = None
    ) -> socket.socket:
        if self._tunnel_host:  # type: ignore[attr-defined]
            return socket.create_connection(address, timeout, source_address)
        return _connected(address[0], address[1], timeout, source_address)


class _CheckedHTTPSConnection(_CheckedConnection, http.client.HTTPSConnection):
    pass


class _PublicOnly(urllib.request.BaseHandler):
    """Checks each request's host by name before it goes (the first and every redirect's),
    and opens direct connections to checked addresses; a request through a proxy goes to
    the proxy as usual."""

    def http_request(self, request: urllib.request.Request) -> urllib.request.Request:
        parsed = urlparse(request.full_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise RefusedUrl(f"not an http(s) URL: {request.full_url[:200]!r}")
        public_addresses(parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80))
        return request

    https_request = http_request


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, request: urllib.request.Request) -> Any:
        direct = not request.has_proxy()
        return self.do_open(_CheckedConnection if direct else http.client.HTTPConnection, request)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, request: urllib.request.Request) -> Any:
        return self.do_open(_CheckedHTTPSConnection, request, context=self._context)  # type: ignore[attr-defined]


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects to http(s) URLs only (urllib's own follows ``ftp:`` too, and refuses others
    with an error that reads as worth retrying)."""

    def http_error_302(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> Any:
        target = headers.get("location") or headers.get("uri") or ""
        if urlparse(urljoin(req.full_url, target)).scheme not in ("http", "https"):
            raise RefusedUrl(f"a redirect to a URL that is not http(s): {target[:200]!r}")
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


_PUBLIC_OPENER = urllib.request.build_opener(
    _PublicOnly, _CheckedHTTPHandler, _CheckedHTTPSHandler, _HttpRedirects
)


def _open(request: urllib.request.Request, settings: FetchSettings) -> Any:
    """urllib's response to ``request``, public addresses only unless ``settings`` allow
    private networks."""
    if settings.private_networks:
        return urllib.request.urlopen(request, timeout=settings.timeout)
    return _PUBLIC_OPENER.open(request, timeout=settings.timeout)


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
            with _open(request, self.settings) as response:
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


def _body(response: Any, url: str, settings: FetchSettings, clock: Callable[[], float]) -> bytes:
    """The body of ``response``, read within the size and time limits of ``settings``."""
    deadline = clock() + settings.max_seconds
    parts: list[bytes] = []
    size = 0
    while part := response.read1(1 << 16):
        parts.append(part)
        size += len(part)
        if size > settings.max_bytes:
            raise PermanentDigestError(
                f"{url} is larger than the {settings.max_bytes:,}-byte limit"
            )
        if clock() > deadline:
            raise FetchError(f"{url} took over {settings.max_seconds:g} s to arrive")
    return b"".join(parts)


def fetch(
    url: str,
    settings: FetchSettings,
    robots: Robots | None = None,
    *,
    etag: str = "",
    last_modified: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> FetchedPage:
    """GET ``url`` (conditionally, given the ``etag`` or ``last_modified`` of a copy); ``clock``
    times the answer against ``settings.max_seconds``.
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
        with _open(request, settings) as response:
            body = _body(response, url, settings, clock)
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
        if isinstance(reason, RefusedUrl):
            raise PermanentDigestError(f"{url[:200]}: {reason}") from None
        raise FetchError(f"could not fetch {url}: {reason}") from exc
