"""The security headers every answer of the server carries: what a browser may load and run on
its pages (Content-Security-Policy, by page), no content sniffing, no referrer.

A plain ASGI middleware, not Starlette's ``BaseHTTPMiddleware``: that one runs each request's
app in a task of its own and streams its answer through a memory channel, which cost a search
request more than its JSON did."""

from __future__ import annotations

import functools

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
UPLOAD_CSP = CSP.replace(
    "default-src 'none';", "default-src 'none'; script-src 'self'; connect-src 'self';"
)
"""The upload page runs one script of this server's (no inline script) and talks to its API."""
DOCS = "/docs"
DOCS_ASSETS = "/static/swagger"
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"
)
"""The API page runs Swagger UI 5 (which reads the OpenAPI 3.1 FastAPI writes; the 4.x of
``swagger-ui-bundle`` could not) from the ``fastapi-offline`` package's files (no CDN: it works
offline), started by an inline script."""
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def _policy(path: str) -> str:
    docs = path == DOCS or path.startswith(DOCS_ASSETS)
    return DOCS_CSP if docs else UPLOAD_CSP if path == "/upload" else CSP


def security_headers(path: str) -> dict[str, str]:
    """The headers an answer to ``path`` carries."""
    return {**SECURITY_HEADERS, "Content-Security-Policy": _policy(path)}


@functools.cache
def _raw_headers(policy: str) -> tuple[tuple[bytes, bytes], ...]:
    """:func:`security_headers` with ``policy`` as ASGI gives headers (made once per policy)."""
    named = {**SECURITY_HEADERS, "Content-Security-Policy": policy}
    return tuple((n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in named.items())


_REPLACED = frozenset(name for name, _ in _raw_headers(CSP))


class SecurityHeaders:
    """Sets :func:`security_headers` on every HTTP answer, over any the app set itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = _raw_headers(_policy(scope["path"]))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", ())
                kept = [(n, v) for n, v in headers if n.lower() not in _REPLACED]
                message = {**message, "headers": [*kept, *added]}
            await send(message)

        await self.app(scope, receive, with_headers)
