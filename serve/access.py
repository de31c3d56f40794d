"""Who may read (``serve --require-token``): a private library stays private.

Every route but the health check and the icon (and ``/metrics`` unless ``--public-metrics``)
asks for a token whose scopes include ``read`` (``bucketdigest tokens add NAME --scope
read``; ``write`` and ``upload`` include it), or the server's own write token. A client
presents it as a bearer token (``Authorization: Bearer ...``), as ``X-Api-Key`` or
``unstructured-api-key`` (what the conversion services' clients send), or, in a browser, as
the session cookie the sign-in form sets. Each request checks the token against the bucket
(one GET), so a revoked token is refused at once. The broker's routes have their own check
(work tokens) and the sign-in form is open, or nobody could sign in.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Annotated
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from bucketdigest.serve.guards import SPLIT_COLLECTION_PATH, App, Receive, Scope, Send
from bucketdigest.shared.store import Store
from bucketdigest.shared.tokens import Scope as TokenScope
from bucketdigest.shared.tokens import verify_token

COOKIE = "bucketdigest_token"
SIGN_IN = "/signin"
OPEN_PATHS = frozenset(
    {"/api/healthz", "/health", SPLIT_COLLECTION_PATH, SIGN_IN, "/favicon.ico", "/favicon.svg"}
)
OPEN_PREFIXES = ("/broker/",)

router = APIRouter(include_in_schema=False)


def presented_token(headers: dict[bytes, bytes]) -> str | None:
    """The token a request carries: its bearer token, its ``X-Api-Key``, or its cookie."""
    authorization = headers.get(b"authorization", b"").decode("latin-1")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    for header in (b"x-api-key", b"unstructured-api-key"):
        if key := headers.get(header, b"").decode("latin-1").strip():
            return key
    cookies = SimpleCookie()
    try:
        cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # a malformed Cookie header is no token
        return None
    found = cookies.get(COOKIE)
    return found.value if found is not None else None


def reads_allowed(store: Store, server_token: str | None, token: str | None) -> bool:
    """Whether ``token`` may read: the server's write token, or a live bucket token with read."""
    if not token:
        return False
    if server_token and hmac.compare_digest(token.encode(), server_token.encode()):
        return True
    return verify_token(store, token, TokenScope.READ) is not None


class TokenGate:
    """ASGI middleware: 401 for a request without a read token (a sign-in page for a
    browser's page request, JSON otherwise)."""

    def __init__(
        self, app: App, store: Callable[[], Store], server_token: str | None, public_metrics: bool
    ) -> None:
        self.app = app
        self.store = store
        self.server_token = server_token
        self.open = OPEN_PATHS | ({"/metrics"} if public_metrics else set())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.open or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        token = presented_token(headers)
        allowed = await anyio.to_thread.run_sync(
            reads_allowed, self.store(), self.server_token, token
        )
        if allowed:
            await self.app(scope, receive, send)
            return
        browser = b"text/html" in headers.get(b"accept", b"") and scope["method"] == "GET"
        if browser:
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            body = _sign_in_page(target, refused=token is not None).encode()
            kind = b"text/html; charset=utf-8"
        else:
            reason = (
                "this token is unknown, revoked or cannot read" if token else "a token is needed"
            )
            body = json.dumps(
                {"detail": f"{reason} (bucketdigest tokens add NAME --scope read)"}
            ).encode()
            kind = b"application/json"
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="bucketdigest"'),
                (b"cache-control", b"no-store"),
            ],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": body})


def _safe_next(target: str) -> str:
    """Where to go after signing in: a path of this server, never another site."""
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


def _sign_in_page(target: str, refused: bool) -> str:
    note = "<p class=muted>That token was refused.</p>" if refused else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        "<title>Sign in · bucketdigest</title></head><body style='font: 16px system-ui; "
        "max-width: 28rem; margin: 4rem auto; padding: 0 1rem'>"
        "<h1>This library is private</h1>"
        "<p>Sign in with a token that may read it (<code>bucketdigest tokens add NAME "
        "--scope read</code>).</p>"
        f"{note}<form method=post action='{SIGN_IN}'>"
        f"<input type=hidden name=next value='{quote(_safe_next(target), safe='/?=&')}'>"
        "<label>Token <input type=password name=token autocomplete=current-password "
        "required style='width: 100%'></label> <button>Sign in</button></form></body></html>"
    )


@router.get(SIGN_IN, response_class=HTMLResponse)
def sign_in_form(next: str = "/") -> HTMLResponse:
    return HTMLResponse(_sign_in_page(next, refused=False))


@router.post(SIGN_IN)
def sign_in(
    request: Request, token: Annotated[str, Form()], next: Annotated[str, Form()] = "/"
) -> Response:
    """Check the token, then keep it in a session cookie (HttpOnly, SameSite=Strict)."""
    backend = request.app.state.backend
    if not reads_allowed(backend.store, backend.settings.token, token):
        return HTMLResponse(_sign_in_page(next, refused=True), status_code=401)
    answer = RedirectResponse(_safe_next(next), status_code=303)
    answer.set_cookie(
        COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return answer
