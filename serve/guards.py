"""What every request passes before a route sees it: a ``Host`` the server answers to, an
``Origin`` it trusts on anything that writes or talks to an assistant, a query string of sane
length, and ``HEAD`` answered as the ``GET`` it stands for.

A loopback server that accepted any ``Host`` could be read by a web page elsewhere through DNS
rebinding (the page's own name resolved to 127.0.0.1), and would reflect the name in its
redirects. So a request must name the address the server is bound to, a loopback name, an IP
address (no name to rebind) when it is bound to every interface, or a name given with
``--allowed-host``. The ``Origin`` a browser sends is checked the same way (its host must be one
the server answers to, or one of ``--cors-origin``) on every ``POST`` and on ``/mcp``, as the
Model Context Protocol's transport requires: a page elsewhere cannot post the web forms or drive
the assistant endpoint from a visitor's browser. ``GET /mcp`` is answered 405: this server
offers no event stream there (each call is answered on its own ``POST``).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_QUERY_BYTES = 8192
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
AGENT_PATH = "/mcp"


def _host_name(value: str) -> str:
    """``Host`` without its port: ``[::1]:8000`` → ``::1``, ``example.org:80`` → ``example.org``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class RequestGuard:
    """ASGI middleware: 400 for a ``Host`` the server does not answer to, 414 for an overlong
    query string, and ``HEAD`` served by the ``GET`` route without its body."""

    def __init__(
        self,
        app: App,
        bound: str,
        allowed: Iterable[str] = (),
        origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.any_ip = bound in WILDCARD_BINDS
        self.names = LOOPBACK_NAMES | {bound.lower()} | {_host_name(a) for a in allowed}
        self.origins = {origin.rstrip("/").lower() for origin in origins}

    def accepts(self, host: str) -> bool:
        name = _host_name(host)
        return name in self.names or (self.any_ip and _is_ip(name))

    def trusts(self, origin: str) -> bool:
        """An ``Origin`` header's site may act here: one of ``--cors-origin``, or a page
        served from a host this server answers to."""
        origin = origin.strip().rstrip("/").lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and self.accepts(parts.netloc)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.accepts(host):
            await _refuse(send, 400, f"this server does not answer to the host {host[:100]!r}")
            return
        if len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
            await _refuse(send, 414, f"the query string is over {MAX_QUERY_BYTES} bytes")
            return
        agents = scope["path"].rstrip("/") == AGENT_PATH
        origin = headers.get(b"origin", b"").decode("latin-1")
        writes = scope["method"] in ("POST", "PUT", "PATCH", "DELETE")
        if (agents or writes) and origin and not self.trusts(origin):
            await _refuse(send, 403, f"requests from the origin {origin[:100]!r} are not accepted")
            return
        if agents and scope["method"] in ("GET", "HEAD"):
            await _refuse(
                send, 405, "no event stream here: send each call as a POST", allow=b"POST"
            )
            return
        if scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)


async def _refuse(send: Send, status: int, detail: str, allow: bytes | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    if allow is not None:
        headers.append((b"allow", allow))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
