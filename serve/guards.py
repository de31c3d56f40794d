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
MAX_BODY_BYTES = 4 << 20
"""A request body's limit, checked before a route reads it (the largest we take is a
broker's small write, 256 KiB in base64, or a settings change)."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
AGENT_PATH = "/mcp"
UPLOAD_PATH = "/api/documents"
DOCLING_FILE_PATHS = ("/v1/convert/file", "/v1/convert/file/async")
DOCLING_SOURCE_PATHS = ("/v1/convert/source", "/v1/convert/source/async")
UNSTRUCTURED_PATH = "/general/v0/general"
SPLIT_COLLECTION_PATH = "/general/docs"
"""What Unstructured's SDK asks (GET) before it sends a split PDF's page batches."""
UPLOAD_PATHS = frozenset({UPLOAD_PATH, *DOCLING_FILE_PATHS, UNSTRUCTURED_PATH})
"""Where documents are sent as multipart files: bodies up to ``--max-upload``, streamed."""
MAX_SOURCE_BODY_BYTES = 64 << 20
"""A docling-serve source request's JSON (files inline in base64) is read whole: this much."""


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
    query string, 413 for a body over ``MAX_BODY_BYTES`` (told by its ``Content-Length``, or
    counted as it arrives, before any route or token check reads it), and ``HEAD`` served by
    the ``GET`` route without its body."""

    def __init__(
        self,
        app: App,
        bound: str,
        allowed: Iterable[str] = (),
        origins: Iterable[str] = (),
        max_upload: int = MAX_BODY_BYTES,
    ) -> None:
        self.app = app
        self.max_upload = max_upload
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
        uploading = scope["method"] == "POST" and scope["path"] in UPLOAD_PATHS
        limit = self.max_upload if uploading else MAX_BODY_BYTES
        if scope["method"] == "POST" and scope["path"] in DOCLING_SOURCE_PATHS:
            limit = min(self.max_upload, MAX_SOURCE_BODY_BYTES)
        declared = headers.get(b"content-length", b"0").decode("latin-1")
        if not declared.isdigit() or int(declared) > limit:
            await _refuse(send, 413, _too_large(limit, uploading))
            return
        if uploading:
            await self._upload(scope, receive, send, limit)
            return
        if b"content-length" not in headers and scope["method"] in ("POST", "PUT", "PATCH"):
            body = await _body_within(receive, limit)
            if body is None:
                await _refuse(send, 413, f"a request body is at most {limit} bytes")
                return
            receive = _replay(body, receive)
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

    async def _upload(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        """An upload streams through (never held here), counted as it arrives: past ``limit``
        the route sees the client gone and the client gets 413."""
        origin = dict(scope.get("headers") or []).get(b"origin", b"").decode("latin-1")
        if origin and not self.trusts(origin):
            await _refuse(send, 403, f"requests from the origin {origin[:100]!r} are not accepted")
            return
        received = 0
        over = False

        async def counted() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def unless_over(message: Message) -> None:
            if not over:
                await send(message)

        try:
            await self.app(scope, counted, unless_over)
        except Exception:
            if not over:
                raise
        if over:
            await _refuse(send, 413, _too_large(limit, True))


def _too_large(limit: int, uploading: bool) -> str:
    if uploading:
        return (
            f"an upload is at most {limit:,} bytes (the server's --max-upload): "
            "send fewer files at once; a single file over it cannot be sent"
        )
    return f"a request body is at most {limit} bytes"


async def _body_within(receive: Receive, limit: int) -> bytes | None:
    """The whole body of a request sent without ``Content-Length``; None past ``limit``."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if size > limit:
            return None
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, rest: Receive) -> Receive:
    """The body read already, then the connection's own messages (a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await rest()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


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
