"""The JSON API under ``/api``; every route is documented at ``/docs`` and ``/openapi.json``."""

from __future__ import annotations

import mimetypes
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import orjson
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from bucketdigest.search.hit import Hit
from bucketdigest.search.request import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    PER_DOCUMENT,
    Level,
    Mode,
    SearchRequest,
)
from bucketdigest.serve.backend import Backend
from bucketdigest.serve.documents import DocumentView, checked_hash, read_page
from bucketdigest.serve.html import files_url, served_markdown
from bucketdigest.serve.page_images import (
    MAX_PAGE_IMAGE_PIXELS,
    MIN_PAGE_IMAGE_PIXELS,
    PAGE_IMAGE_PIXELS,
)
from bucketdigest.shared import keys
from bucketdigest.shared.docling_document import docling_document
from bucketdigest.shared.errors import DamagedResult
from bucketdigest.shared.result import DOCUMENT, DOCUMENT_STRUCTURE, THUMBNAIL, ResultZip

router = APIRouter(prefix="/api")
_bearer = HTTPBearer(auto_error=False, description="BUCKETDIGEST_SERVE_TOKEN")

SAFE_INLINE = {"image/png", "image/jpeg", "image/gif", "image/webp"}
"""Media types a browser may show inline; anything else is sent as a plain download."""


def backend(request: Request) -> Backend:
    return request.app.state.backend


BackendDep = Annotated[Backend, Depends(backend)]
Token = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


class SearchQuery(BaseModel):
    """The query parameters both searches take."""

    q: str = Field(description="What to look for.", max_length=MAX_QUERY_CHARS)
    mode: Mode = Mode.HYBRID
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    source: str | None = Field(None, description="Only sources whose URL or path has this.")
    type: str | None = Field(None, description="Only this file type (pdf, md, ...).")
    tag: str | None = None
    document: str | None = Field(
        None, description="Only this document's passages (its hash): more from this document."
    )
    per_document: int = Field(
        PER_DOCUMENT, ge=0, le=MAX_LIMIT, description="Passages of one document at most (0: all)."
    )

    def request(self, level: Level) -> SearchRequest:
        return SearchRequest(
            self.q,
            level,
            self.mode,
            self.limit,
            self.source,
            None,
            self.type,
            self.tag,
            self.document,
            self.per_document,
        )

    def more_from(self, hit: Hit) -> str | None:
        """The search that shows the rest of ``hit``'s document (None: nothing was left out)."""
        if not hit.more:
            return None
        asked = {"q": self.q, "mode": self.mode.value, "limit": self.limit, "document": hit.digest}
        return "/api/search/chunks?" + urlencode(asked)


Search = Annotated[SearchQuery, Query()]


@router.get("/search/chunks", summary="Find exactly where something is written")
def search_chunks(backend: BackendDep, query: Search) -> Response:
    hits = backend.search(query.request(Level.CHUNKS))
    found = {"hits": [{**h.to_dict(), "more_from_document": query.more_from(h)} for h in hits]}
    return _found(backend, found)


@router.get("/search/documents", summary="Which documents are about something")
def search_documents(backend: BackendDep, query: Search) -> Response:
    found = {"hits": [h.to_dict() for h in backend.search(query.request(Level.DOCUMENTS))]}
    return _found(backend, found)


def _found(backend: Backend, found: dict[str, Any]) -> Response:
    """``found`` with, under ``incomplete``, what the search left out because files of the
    index are lost (until the indexer's next run rebuilds it). Sent as the plain JSON data
    it is: FastAPI's encoder would walk every value of a returned dict again, which took
    6 ms of an answer with its hits' regions (more than the rest of a repeated search); and
    written by orjson, in a tenth of the standard library's time (0.6 ms for ten hits)."""
    damage = backend.searcher().damage
    content = orjson.dumps({**found, "incomplete": damage} if damage else found)
    return Response(content, media_type="application/json")


@router.get("/documents/{digest}", summary="A document: state, info, every output's status")
def document(backend: BackendDep, digest: str) -> dict[str, Any]:
    return _readable(backend.document(digest)).to_dict()


@router.get("/documents/{digest}/summary", summary="A document's summary and tags")
def summary(backend: BackendDep, digest: str) -> dict[str, Any]:
    view = _readable(backend.document(digest))
    return {"digest": view.digest, "summary": view.summary, "tags": list(view.tags)}


@router.get(
    "/documents/{digest}/markdown",
    summary="A document's Markdown, whole or one page (with its OCR text)",
    response_class=PlainTextResponse,
)
def markdown(backend: BackendDep, digest: str, page: Annotated[int | None, Query(ge=1)] = None):
    digest = checked_hash(digest, backend.store)
    if page is not None:
        text = read_page(backend.cache, digest, page).text
    else:
        text = backend.cache.member(digest, DOCUMENT).decode("utf-8", "replace")
    linked = served_markdown(text, files_url(digest))
    return PlainTextResponse(linked, media_type="text/markdown; charset=utf-8")


@router.get(
    "/documents/{digest}/docling", summary="A document as a DoclingDocument (docling-core's JSON)"
)
def docling(backend: BackendDep, digest: str) -> Response:
    digest = checked_hash(digest, backend.store)
    with ResultZip(backend.cache.zip_bytes(digest)) as result:
        names = result.info().get("names") or ["document"]
        document = docling_document(result.json(DOCUMENT_STRUCTURE, {}), str(names[0]))
    return Response(document.model_dump_json(), media_type="application/json")


@router.get("/documents/{digest}/thumbnail", summary="The first page as a PNG")
def thumbnail(backend: BackendDep, digest: str) -> Response:
    data = backend.cache.member(checked_hash(digest, backend.store), THUMBNAIL)
    return Response(data, media_type="image/png", headers=_immutable())


@router.get(
    "/documents/{digest}/pages/{page}/image",
    summary="A page of the document as an image (PNG or JPEG, the smaller), from its source",
)
def page_image(
    backend: BackendDep,
    digest: str,
    page: Annotated[int, PathParam(ge=1)],
    size: Annotated[
        int,
        Query(
            ge=MIN_PAGE_IMAGE_PIXELS,
            le=MAX_PAGE_IMAGE_PIXELS,
            description="Pixels on the image's long side",
        ),
    ] = PAGE_IMAGE_PIXELS,
) -> Response:
    image = backend.page_image(digest, page, size)
    return Response(image.data, media_type=image.media_type, headers=_immutable())


@router.get("/documents/{digest}/files/{member:path}", summary="One file of the result zip")
def member(backend: BackendDep, digest: str, member: str) -> Response:
    data = backend.member(digest, member)
    guessed = mimetypes.guess_type(member)[0] or "application/octet-stream"
    if guessed in SAFE_INLINE:
        return Response(data, media_type=guessed, headers=_immutable())
    headers = {"Content-Disposition": _attachment(member.rsplit("/", 1)[-1])}
    return Response(data, media_type="application/octet-stream", headers=headers)


@router.get("/documents/{digest}/zip", summary="The whole result zip")
def result_zip(backend: BackendDep, digest: str) -> Response:
    digest = checked_hash(digest, backend.store)
    headers = {"Content-Disposition": f'attachment; filename="{digest}.zip"'}
    return Response(backend.cache.zip_bytes(digest), media_type="application/zip", headers=headers)


@router.post("/documents/{digest}/retry", summary="Put a failed document back in line")
def retry(backend: BackendDep, digest: str, token: Token) -> dict[str, Any]:
    digest = checked_hash(digest, backend.store)
    requeued = backend.retry(digest, token.credentials if token else None)
    return {"digest": digest, "requeued": requeued}


@router.post("/documents/{digest}/reprocess", summary="Run digesters again on a done document")
def reprocess(
    backend: BackendDep, digest: str, token: Token, digester: str | None = None
) -> dict[str, Any]:
    digest = checked_hash(digest, backend.store)
    chosen = backend.reprocess(digest, digester, token.credentials if token else None)
    return {"digest": digest, "digesters": chosen}


@router.get("/settings", summary="The bucket's settings, which every worker and monitor follows")
def settings(backend: BackendDep) -> dict[str, Any]:
    return backend.bucket_settings()


@router.put("/settings", summary="Change settings for the whole fleet (null unsets one)")
def change_settings(
    backend: BackendDep, token: Token, changes: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    return backend.configure(changes, token.credentials if token else None)


@router.get("/status", summary="Counts, throughput, ETA, failures, ingest runs, index freshness")
def status(backend: BackendDep) -> dict[str, Any]:
    return backend.status()


@router.get("/healthz", summary="Whether the server can reach its bucket")
def healthz(backend: BackendDep) -> dict[str, Any]:
    backend.store.head(keys.INDEX_WRITER_KEY)
    return {"ok": True}


def _readable(view: DocumentView) -> DocumentView:
    """``view``, or DamagedResult (a 500 saying to reprocess) when its result is damaged."""
    if view.damage is not None:
        raise DamagedResult(view.digest, view.damage)
    return view


def _attachment(name: str) -> str:
    """A download's Content-Disposition: an ASCII name, and the real one (RFC 6266) when it
    is not ASCII (a header must be Latin-1)."""
    ascii_name = name.encode("ascii", "replace").decode().replace('"', "").replace("?", "_")
    if ascii_name == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


def _immutable() -> dict[str, str]:
    return {"Cache-Control": "private, max-age=60"}
