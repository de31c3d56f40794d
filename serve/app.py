"""The FastAPI application: routes, errors as clean answers, security headers; and running it.

Errors never show a stack trace: a bad hash or an unknown document is a 404, a bad query a 400,
a write without the token a 401/403, a result zip that is damaged a 500 that says to reprocess
the document, and a bucket or index that cannot be read a 503, as JSON under ``/api`` and as a
page elsewhere.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from bucketdigest.monitor.gauges import QueueGauges
from bucketdigest.serve import access, api, broker, docling_api, pages, unstructured_api, uploads
from bucketdigest.serve.access import TokenGate
from bucketdigest.serve.agents import agent_transport, build_agent_server
from bucketdigest.serve.backend import (
    Backend,
    BadRequest,
    NotAuthorized,
    NotPossible,
    ServeSettings,
    WritesOff,
)
from bucketdigest.serve.broker import broker_for
from bucketdigest.serve.docling_tasks import UnknownTask
from bucketdigest.serve.documents import UnknownDocument
from bucketdigest.serve.guards import LOOPBACK_NAMES, WILDCARD_BINDS, RequestGuard
from bucketdigest.serve.headers import DOCS, DOCS_ASSETS, SecurityHeaders, security_headers
from bucketdigest.serve.page_images import NoPageImage
from bucketdigest.serve.processes import balances_connections, serve_from_processes
from bucketdigest.serve.reasons import argument_problems
from bucketdigest.serve.results import NoResult, NoSuchMember
from bucketdigest.shared.config import open_store
from bucketdigest.shared.errors import (
    BucketdigestError,
    ConfigError,
    DamagedResult,
    DamagedSettings,
    IndexNotFound,
    InvalidQuery,
    NotFound,
    SearchIndexError,
    SourceError,
    StoreError,
)
from bucketdigest.shared.lifeline import exit_with_parent

log = logging.getLogger(__name__)

_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (UnknownDocument, 404, "Not found"),
    (UnknownTask, 404, "Not found"),
    (uploads.SyncWaitOver, 504, "Taking too long"),
    (NoResult, 404, "Not found"),
    (NoSuchMember, 404, "Not found"),
    (NoPageImage, 404, "Not found"),
    (NotFound, 404, "Not found"),
    (DamagedResult, 500, "Result damaged"),
    (InvalidQuery, 400, "Bad request"),
    (BadRequest, 400, "Bad request"),
    (SourceError, 400, "Bad request"),
    (WritesOff, 403, "Forbidden"),
    (NotPossible, 409, "Not possible now"),
    (IndexNotFound, 503, "No search index yet"),
    (SearchIndexError, 503, "Search index unavailable"),
    (StoreError, 503, "Bucket unavailable"),
    (DamagedSettings, 503, "Bucket settings damaged"),
)
MAX_REQUEST_HEAD = 2 << 20
"""The HTTP parser reads a request line and headers up to this size, so a long query string is
answered 414 by :class:`RequestGuard` (over this, the parser answers 400)."""


_JSON_PATHS = ("/api", "/v1/", "/general/")
"""Routes that answer errors in JSON (``{"detail": ...}``): ours, docling-serve's and
Unstructured's; the rest are pages."""


def _answer(request: Request, status: int, title: str, message: str) -> Response:
    if request.url.path.startswith(_JSON_PATHS):
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse({"detail": message}, status_code=status, headers=headers)
    return pages.render(request, "error.html", status, title=title, message=message)


async def _unexpected(request: Request, exc: Exception) -> Response:
    """Anything else (a bug): a clear 500 page or JSON, with the
    security headers (this handler answers outside the middleware that adds them)."""
    log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    response = _answer(request, 500, "Server error", "Something went wrong; the log says what.")
    response.headers.update(security_headers(request.url.path))
    return response


async def _library_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotAuthorized):
        status = 401 if exc.missing else 403
        return _answer(request, status, "Not authorized", str(exc))
    if isinstance(exc, uploads.UnusableUpload):
        return _answer(request, exc.status, "Upload refused", str(exc))
    for kind, status, title in _STATUS:
        if isinstance(exc, kind):
            if status == 503:
                log.warning("%s %s: %s", request.method, request.url.path, exc)
            return _answer(request, status, title, str(exc))
    log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _answer(request, 500, "Server error", "Something went wrong; the log says what.")


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return _answer(request, 400, "Bad request", argument_problems(exc.errors(), skip=1))


def create_app(settings: ServeSettings) -> FastAPI:
    """The application for one bucket."""
    backend = Backend(settings)
    brokering = broker_for(backend.store) if settings.broker else None
    agents = build_agent_server(backend) if settings.mcp else None
    agent_routes = agents.streamable_http_app(**agent_transport(settings)).routes if agents else []

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as running:
            if agents is not None:
                await running.enter_async_context(agents.session_manager.run())
            yield
        backend.close()
        if brokering is not None:
            brokering.outbox.close()

    app = FastAPI(
        title="bucketdigest",
        summary="Search, read and watch a bucket of digested documents.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _api_page(app)
    app.state.backend = backend
    app.state.broker = brokering
    app.router.routes.extend(agent_routes)  # /mcp
    app.include_router(api.router)
    app.include_router(uploads.router)
    app.include_router(docling_api.router)
    app.include_router(unstructured_api.router)
    app.include_router(broker.router)
    app.include_router(pages.router)
    gauges = CollectorRegistry()
    gauges.register(QueueGauges(backend.store))

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        """The queue gauges (documents per state, oldest todo age) for Prometheus."""
        return Response(generate_latest(gauges), media_type=CONTENT_TYPE_LATEST)

    app.include_router(access.router)
    if settings.require_token:  # innermost: its 401 gets the security headers too
        app.add_middleware(
            TokenGate,
            store=lambda: backend.store,
            server_token=settings.token,
            public_metrics=settings.public_metrics,
        )
    app.add_exception_handler(BucketdigestError, _library_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _unexpected)

    app.add_middleware(SecurityHeaders)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT"],
            allow_headers=["Authorization"],
        )
    app.add_middleware(
        RequestGuard,
        bound=settings.host,
        allowed=settings.allowed_hosts,
        origins=settings.cors_origins,
        max_upload=settings.max_upload,
    )
    return app


def _api_page(app: FastAPI) -> None:
    """Swagger UI at ``/docs``, its script and style served from the package."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    assets = Path(fastapi_offline.__file__).with_name("static")
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="swagger")

    @app.get(DOCS, include_in_schema=False)
    def docs() -> Response:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="bucketdigest API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )


SETTINGS_VARIABLE = "BUCKETDIGEST_SERVE_SETTINGS"
"""How ``run_server`` hands its settings to uvicorn's worker processes."""


def app_from_environment() -> FastAPI:
    """The application of a worker process that uvicorn started (see :func:`run_server`). It
    leaves with the server that started it: a killed server's workers would otherwise go on
    holding its port, and a new server could not start there."""
    exit_with_parent()
    return create_app(pickle.loads(base64.b64decode(os.environ[SETTINGS_VARIABLE])))


def _check_can_serve(settings: ServeSettings) -> None:
    """ConfigError unless the bucket is there and the port is free (before anything starts,
    so a mistyped bucket or a port in use is a one-line error, not a server that dies). The
    probe binds as uvicorn does (``SO_REUSEADDR``): the connections of a server just stopped,
    waiting out TCP's TIME_WAIT, do not keep a new one off its port for a minute."""
    open_store(settings.store, self_test=False)
    with socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((settings.host, settings.port))
        except OSError as exc:
            raise ConfigError(
                f"cannot serve on {settings.host}:{settings.port}: {exc.strerror or exc} "
                "(is another server running there? choose another --port)"
            ) from exc


def exposure(settings: ServeSettings) -> list[str]:
    """What a server bound as ``settings`` says shows to whom (one line each)."""
    said = []
    if settings.host not in LOOPBACK_NAMES and not settings.require_token:
        said.append(
            f"serving {settings.host or 'every interface'} without --require-token: anyone who "
            "can reach it can search and read every document of the bucket"
        )
    if settings.host in WILDCARD_BINDS:
        said.append(
            "serving on every interface: tokens travel in clear text unless a TLS proxy is in "
            "front; give --allowed-host for the names clients use"
        )
    return said


def run_server(
    settings: ServeSettings, announce: Callable[[], None] | None = None, **uvicorn_options: Any
) -> None:
    """Serve until interrupted, from ``settings.processes`` processes: a search holds
    Python's lock while Lance scans, so one process answers one search at a time. The bucket
    and the port are checked first (ConfigError), then ``announce`` is called."""
    import uvicorn

    from bucketdigest.serve.nodelay import NoDelayH11Protocol

    _check_can_serve(settings)
    if announce is not None:
        announce()

    for warning in exposure(settings):
        log.warning("%s", warning)
    common = {
        "host": settings.host,
        "port": settings.port,
        "http": NoDelayH11Protocol,
        "h11_max_incomplete_event_size": MAX_REQUEST_HEAD,
        **uvicorn_options,
    }
    if settings.processes == 1:
        uvicorn.run(create_app(settings), **common)
        return
    if balances_connections():
        host, port = common.pop("host"), common.pop("port")
        serve_from_processes(create_app, settings, host, port, settings.processes, common)
        return
    os.environ[SETTINGS_VARIABLE] = base64.b64encode(pickle.dumps(settings)).decode()
    uvicorn.run(
        f"{__name__}:app_from_environment", factory=True, workers=settings.processes, **common
    )


@contextmanager
def background_server(settings: ServeSettings) -> Iterator[str]:
    """Serve from a thread of this process while the block runs; yields the base URL (port 0
    in ``settings`` takes a free one). For tests, benchmarks and embedding in other programs."""
    import uvicorn

    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bucketdigest-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise BucketdigestError(f"the server did not start on {settings.host}:{settings.port}")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{settings.host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
