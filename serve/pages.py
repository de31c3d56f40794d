"""The web pages: search, a document, the status dashboard, server-rendered without
JavaScript; and the upload page, whose drop area is a small script of ours (``upload.js``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from bucketdigest.monitor.status import describe_time_left
from bucketdigest.search.request import MAX_QUERY_CHARS, Level, Mode, SearchRequest
from bucketdigest.serve.api import BackendDep
from bucketdigest.serve.backend import Backend
from bucketdigest.serve.documents import read_pages
from bucketdigest.serve.html import files_url, markdown_html, snippet_html
from bucketdigest.shared.bucket_settings import SETTING_NAMES
from bucketdigest.shared.chain import DIGESTERS
from bucketdigest.shared.filetypes import SUPPORTED_EXTENSIONS

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).with_name("templates"))
templates.env.filters["snippet"] = snippet_html

PAGES_PER_VIEW = 20
NOTICES = {
    "retried": "The document is back in line; a worker will take it.",
    "not-failed": "The document was not failed: nothing to retry.",
    "reprocessing": "The document is queued to be digested again.",
}


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    backend: Backend = request.app.state.backend
    context.setdefault("writes", backend.settings.allow_writes)
    return templates.TemplateResponse(request, template, context, status_code=status_code)


FAVICON = Path(__file__).with_name("templates") / "favicon.svg"


@router.get("/favicon.svg")
@router.get("/favicon.ico")
def favicon() -> Response:
    """The tab's icon (a bucket of lines), for browsers that ask ``/favicon.ico`` too."""
    return Response(
        FAVICON.read_bytes(),
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


@router.get("/", response_class=HTMLResponse)
def search_page(
    request: Request,
    backend: BackendDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    level: Level = Level.CHUNKS,
    mode: Mode = Mode.HYBRID,
    type: str = "",
    source: str = "",
    document: str = "",
) -> HTMLResponse:
    hits = None
    if q.strip():
        request_ = SearchRequest(
            q, level, mode, 20, source or None, None, type or None, document=document or None
        )
        hits = backend.search(request_)
    return render(
        request,
        "search.html",
        q=q,
        level=level.value,
        mode=mode.value,
        type=type,
        source=source,
        document=document,
        hits=hits,
        modes=[m.value for m in Mode],
    )


@router.get("/documents/{digest}", response_class=HTMLResponse)
def document_page(
    request: Request,
    backend: BackendDep,
    digest: str,
    page: Annotated[int, Query(ge=1)] = 1,
    notice: str = "",
) -> HTMLResponse:
    view = backend.document(digest)
    first = (page - 1) // PAGES_PER_VIEW * PAGES_PER_VIEW + 1
    last = min(view.page_count, first + PAGES_PER_VIEW - 1)
    readable = last >= first and view.damage is None
    pages = read_pages(backend.cache, view.digest, range(first, last + 1)) if readable else []
    files = files_url(view.digest)
    return render(
        request,
        "document.html",
        doc=view,
        pages=[
            (p.number, markdown_html(p.markdown, files), markdown_html(p.ocr, files)) for p in pages
        ],
        summary=markdown_html(view.summary, files),
        first=first,
        last=last,
        per_view=PAGES_PER_VIEW,
        notice=NOTICES.get(notice, ""),
        digesters=list(DIGESTERS),
    )


@router.get("/documents/{digest}/pages/{page}", response_class=HTMLResponse)
def page_view(
    request: Request,
    backend: BackendDep,
    digest: str,
    page: Annotated[int, PathParam(ge=1)],
    chunk: Annotated[str, Query(max_length=200)] = "",
    blocks: Annotated[str, Query(max_length=2000)] = "",
) -> HTMLResponse:
    """One page as an image, with the blocks ``blocks`` of the hit ``chunk`` highlighted
    (the whole chunk when none is named) and scrolled into view (``#passage``)."""
    view = backend.document(digest)
    focus = tuple(b for b in blocks.split(",") if b)
    regions = backend.passage_regions(view.digest, chunk, focus) if chunk else ()
    return render(
        request,
        "page.html",
        doc=view,
        page=page,
        size=backend.page_size(view.digest, page),
        regions=[r for r in regions if r.get("page") == page],
    )


@router.post("/documents/{digest}/retry")
def retry_form(
    backend: BackendDep, digest: str, token: Annotated[str, Form()] = ""
) -> RedirectResponse:
    notice = "retried" if backend.retry(digest, token) else "not-failed"
    return RedirectResponse(f"/documents/{digest}?notice={notice}", status_code=303)


@router.post("/documents/{digest}/reprocess")
def reprocess_form(
    backend: BackendDep,
    digest: str,
    token: Annotated[str, Form()] = "",
    digester: Annotated[str, Form()] = "",
) -> RedirectResponse:
    backend.reprocess(digest, digester or None, token)
    return RedirectResponse(f"/documents/{digest}?notice=reprocessing", status_code=303)


UPLOAD_SCRIPT = Path(__file__).with_name("templates") / "upload.js"


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request, backend: BackendDep) -> HTMLResponse:
    return render(
        request,
        "upload.html",
        max_mib=backend.settings.max_upload >> 20,
        origin=str(request.base_url).rstrip("/"),
        accept=",".join(f".{ext}" for ext in sorted(SUPPORTED_EXTENSIONS)),
    )


@router.get("/upload.js")
def upload_script() -> Response:
    return Response(
        UPLOAD_SCRIPT.read_bytes(),
        media_type="text/javascript",
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request, backend: BackendDep) -> HTMLResponse:
    status = backend.status()
    return render(
        request,
        "status.html",
        status=status,
        chart=bars(status["done_per_minute"]),
        eta=describe_time_left(status["eta_seconds"]),
        settings=backend.bucket_settings(),
        setting_names=SETTING_NAMES,
    )


def bars(values: list[int], width: int = 600, height: int = 80) -> dict[str, Any]:
    """An SVG bar chart's geometry: one bar per value, scaled to the largest."""
    top = max(values, default=0) or 1
    step = width / max(len(values), 1)
    return {
        "width": width,
        "height": height,
        "top": top,
        "bars": [
            {
                "x": round(i * step, 1),
                "width": round(max(step - 1, 1), 1),
                "height": round(height * v / top, 1),
                "y": round(height - height * v / top, 1),
                "value": v,
                "minutes_ago": len(values) - i,
            }
            for i, v in enumerate(values)
        ],
    }
