"""docling-serve's v1 API, the parts its clients call (Open WebUI's Docling engine, n8n, the
docling clients, ``DoclingServiceClient``): a document sent to ``/v1/convert/file`` or
``/v1/convert/source`` is stored and queued like an upload, converted by the fleet's workers,
and answered from its result as docling-serve answers (``document`` with ``md_content``,
``json_content`` as a DoclingDocument, ``html_content``, ``text_content``, as ``to_formats``
asks; ``status``, ``errors``, ``processing_time``, ``timings``).

``/v1/chunk/{hybrid,hierarchical}/...`` answer a document's chunks instead
(:mod:`bucketdigest.serve.docling_chunking`).

This module holds the routes and takes a request's documents in (files, base64 sources, URLs
fetched from public addresses unless the bucket allows private networks). What a request asks
for becomes a task (:mod:`bucketdigest.serve.docling_tasks`), answered from the results
(:mod:`bucketdigest.serve.docling_answers`). A document already done (the same bytes) answers
at once.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlparse

import anyio
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import Response

from bucketdigest.ingestor.inbox import UPLOAD_SOURCE, take_files
from bucketdigest.serve.backend import Backend, BadRequest
from bucketdigest.serve.docling_answers import answer, answer_when_done, task_states, task_status
from bucketdigest.serve.docling_tasks import (
    OPTIONS,
    Task,
    UnknownTask,
    as_list,
    asked_task,
    chunking_task,
    few_enough,
)
from bucketdigest.serve.uploads import check_upload, presented_token, received_files
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.fetch import FetchSettings, fetch
from bucketdigest.shared.filetypes import ext_of_mime
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.tokens import Scope

router = APIRouter(tags=["docling-serve"])

COMPATIBLE_VERSION = "1.38.2"
"""The docling-serve release whose API this follows."""
MAX_WAIT = 60.0
"""The longest a status poll waits (``wait``)."""


def _backend(request: Request) -> Backend:
    return request.app.state.backend


BackendDep = Annotated[Backend, Depends(_backend)]


@router.get("/health", summary="docling-serve: whether the server is up")
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/version", summary="docling-serve: versions")
def version() -> dict[str, str]:
    from importlib.metadata import version as installed

    return {
        "docling-serve": COMPATIBLE_VERSION,
        "docling-core": installed("docling-core"),
        "bucketdigest": installed("bucketdigest"),
    }


@router.post("/v1/convert/file", summary="docling-serve: convert files, waiting for the result")
async def convert_file(request: Request, backend: BackendDep) -> Response:
    task = await _file_task(request, backend)
    return await answer_when_done(backend, task)


@router.post("/v1/convert/file/async", summary="docling-serve: convert files as a task")
async def convert_file_async(request: Request, backend: BackendDep) -> dict[str, Any]:
    task = await _file_task(request, backend)
    return await anyio.to_thread.run_sync(task_status, backend, task)


@router.post("/v1/convert/source", summary="docling-serve: convert URLs or base64 files, waiting")
async def convert_source(
    request: Request, backend: BackendDep, body: Annotated[dict[str, Any], Body()]
) -> Response:
    task = await anyio.to_thread.run_sync(_source_task, backend, presented_token(request), body)
    return await answer_when_done(backend, task)


@router.post("/v1/convert/source/async", summary="docling-serve: convert URLs or files as a task")
async def convert_source_async(
    request: Request, backend: BackendDep, body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    task = await anyio.to_thread.run_sync(_source_task, backend, presented_token(request), body)
    return await anyio.to_thread.run_sync(task_status, backend, task)


@router.post("/v1/chunk/{chunker}/file", summary="docling-serve: chunk files, waiting for them")
async def chunk_file(request: Request, backend: BackendDep, chunker: str) -> Response:
    task = await _file_task(request, backend, chunker)
    return await answer_when_done(backend, task)


@router.post("/v1/chunk/{chunker}/file/async", summary="docling-serve: chunk files as a task")
async def chunk_file_async(request: Request, backend: BackendDep, chunker: str) -> dict[str, Any]:
    task = await _file_task(request, backend, chunker)
    return await anyio.to_thread.run_sync(task_status, backend, task)


@router.post("/v1/chunk/{chunker}/source", summary="docling-serve: chunk URLs or base64 files")
async def chunk_source(
    request: Request,
    backend: BackendDep,
    chunker: str,
    body: Annotated[dict[str, Any], Body()],
) -> Response:
    token = presented_token(request)
    task = await anyio.to_thread.run_sync(_source_task, backend, token, body, chunker)
    return await answer_when_done(backend, task)


@router.post(
    "/v1/chunk/{chunker}/source/async", summary="docling-serve: chunk URLs or files as a task"
)
async def chunk_source_async(
    request: Request,
    backend: BackendDep,
    chunker: str,
    body: Annotated[dict[str, Any], Body()],
) -> dict[str, Any]:
    token = presented_token(request)
    task = await anyio.to_thread.run_sync(_source_task, backend, token, body, chunker)
    return await anyio.to_thread.run_sync(task_status, backend, task)


@router.get("/v1/status/poll/{task_id}", summary="docling-serve: a task's status")
async def poll(
    backend: BackendDep,
    task_id: str,
    wait: Annotated[float, Query(ge=0, description="Seconds to wait for it to end")] = 0.0,
) -> dict[str, Any]:
    task = Task.parse(task_id)
    deadline = time.monotonic() + min(wait, MAX_WAIT)
    while True:
        status = await anyio.to_thread.run_sync(task_status, backend, task)
        if status["task_status"] in ("success", "partial_success", "failure"):
            return status
        if time.monotonic() >= deadline:
            return status
        await anyio.sleep(min(0.25, max(deadline - time.monotonic(), 0)))


@router.get("/v1/result/{task_id}", summary="docling-serve: a task's result")
async def result(backend: BackendDep, task_id: str) -> Response:
    task = Task.parse(task_id)
    states = await anyio.to_thread.run_sync(task_states, backend, task)
    if any(s not in (DocState.DONE, DocState.FAILED) for s in states):
        raise UnknownTask("Task result not found. Please wait for a completion status.")
    return await anyio.to_thread.run_sync(answer, backend, task, states)


async def _file_task(request: Request, backend: Backend, chunker: str | None = None) -> Task:
    """A task for the files of a form (a chunking request's conversion options prefixed
    ``convert_``, its chunker's ``chunking_``)."""
    async with received_files(request, backend) as (saved, form):
        prefix = "convert_" if chunker else ""
        task = asked_task(
            {key: form.getlist(prefix + key) for key in OPTIONS}, form.get("target_type")
        )
        if chunker is not None:
            chunking = {
                key.removeprefix("chunking_"): form.get(key)
                for key in form
                if key.startswith("chunking_")
            }
            task = chunking_task(task, chunker, chunking, form.get("include_converted_doc"))
        few_enough(len(saved))
        report = await anyio.to_thread.run_sync(
            lambda: take_files(backend.store, saved, UPLOAD_SOURCE, settings=task.wanted)
        )
    return replace(
        task,
        digests=tuple(f.digest for f in report.files),
        names=tuple(f.path for f in report.files),
    )


def _source_task(
    backend: Backend, token: str | None, body: dict[str, Any], chunker: str | None = None
) -> Task:
    """A task for the sources of a ``/v1/convert/source`` request: http URLs fetched, base64
    files decoded (``sources`` with ``kind``, or the older ``http_sources`` and
    ``file_sources``); of a ``/v1/chunk/{chunker}/source`` request, with its
    ``convert_options`` and ``chunking_options``."""
    backend.authorize(token, Scope.UPLOAD)
    sources = [s for s in body.get("sources") or [] if isinstance(s, dict)]
    sources += [
        {**s, "kind": "http"} for s in body.get("http_sources") or [] if isinstance(s, dict)
    ]
    sources += [
        {**s, "kind": "file"} for s in body.get("file_sources") or [] if isinstance(s, dict)
    ]
    if not sources:
        raise BadRequest(
            "no source: give sources (kind http with url, or kind file with base64_string "
            "and filename)"
        )
    few_enough(len(sources))
    named = "convert_options" if chunker else "options"
    options = body.get(named) if isinstance(body.get(named), dict) else {}
    target = body.get("target") if isinstance(body.get("target"), dict) else {}
    task = asked_task({key: as_list(options.get(key)) for key in OPTIONS}, target.get("kind"))
    if chunker is not None:
        chunking = body.get("chunking_options")
        chunking = chunking if isinstance(chunking, dict) else {}
        task = chunking_task(task, chunker, chunking, body.get("include_converted_doc"))
    fetching = FetchSettings(
        max_bytes=backend.settings.max_upload,
        respect_robots=False,
        private_networks=any(s.get("kind") == "http" for s in sources)
        and backend.bucket.settings.fetch_private_networks is True,
    )
    with tempfile.TemporaryDirectory(prefix="bucketdigest-source-") as folder:
        saved = [
            _source_file(source, Path(folder) / f"{n:05d}", fetching)
            for n, source in enumerate(sources)
        ]
        for name, path in saved:
            check_upload(name, path, backend.settings.max_upload)
        report = take_files(backend.store, saved, UPLOAD_SOURCE, settings=task.wanted)
    return replace(
        task,
        digests=tuple(f.digest for f in report.files),
        names=tuple(f.path for f in report.files),
    )


def _source_file(
    source: Mapping[str, Any], path: Path, fetching: FetchSettings
) -> tuple[str, Path]:
    """A source saved at ``path``: a file's bytes decoded, a URL's page fetched as
    ``fetching`` allows (public addresses only unless the bucket allows private networks)."""
    kind = source.get("kind")
    if kind == "file":
        name = str(source.get("filename") or "")
        try:
            data = base64.b64decode(str(source.get("base64_string") or ""), validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"{name or 'a file source'}: base64_string is not base64") from None
        path.write_bytes(data)
        return name, path
    if kind == "http":
        url = str(source.get("url") or "")
        try:
            page = fetch(url, fetching)
        except BucketdigestError as exc:
            reason = str(exc)  # fetch's reasons name the URL, most of them
            raise BadRequest(reason if url[:200] in reason else f"{url[:200]}: {reason}") from None
        path.write_bytes(page.body)
        return _url_name(page.final_url, page.content_type), path
    raise BadRequest(f"a source of kind {str(kind)[:40]!r}: the kinds are http and file")


def _url_name(url: str, content_type: str) -> str:
    """A fetched document's name: its URL's last part, with the extension its type says when
    that part has none we take."""
    last = urlparse(url).path.rstrip("/").rsplit("/", 1)[-1] or "index"
    ext = ext_of_mime(content_type.split(";")[0].strip().lower())
    if ext and not last.lower().endswith(f".{ext}"):
        last = f"{last}.{ext}"
    return last
