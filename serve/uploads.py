"""Documents sent over HTTP: ``POST /api/documents`` (multipart, one file or many) with a
token that may upload. Each file is streamed to a temporary file (never held in memory; the
request's size is counted as it arrives, :mod:`.guards`), checked, then ingested as the inbox's
objects are (stored under ``store/raw/``, queued, its name recorded, source ``upload``). The
answer (202) gives each document's hash and where its state is followed:
``GET /api/documents/{hash}``."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import FormData, UploadFile

from bucketdigest.ingestor.inbox import UPLOAD_SOURCE, refusal_reason, take_files, unreadable_type
from bucketdigest.serve.backend import Backend, BadRequest
from bucketdigest.serve.guards import UPLOAD_PATH
from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import BucketdigestError, InvalidKey
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.tokens import Scope

router = APIRouter()

API_KEY_HEADERS = ("x-api-key", "unstructured-api-key")
"""Where the conversion services' clients put their key."""
MAX_FILES = 1000
"""Files one request may carry."""


class UnusableUpload(BucketdigestError):
    """A file of an upload that cannot be taken (empty, a type no digester takes, a bad
    name): the whole request is refused, nothing of it stored."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _backend(request: Request) -> Backend:
    return request.app.state.backend


def presented_token(request: Request) -> str | None:
    """The token an upload carries, as a bearer token, ``X-Api-Key`` (docling's clients) or
    ``unstructured-api-key`` (Unstructured's); never a cookie: a page elsewhere could make a
    browser send it."""
    authorization = request.headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    for header in API_KEY_HEADERS:
        if key := request.headers.get(header, "").strip():
            return key
    return None


@router.post(
    UPLOAD_PATH,
    status_code=202,
    summary="Send documents in (multipart: files, optional names and priority)",
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["files"],
                        "properties": {
                            "files": {
                                "type": "array",
                                "items": {"type": "string", "format": "binary"},
                            },
                            "names": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "A name per file, in order (default: its file "
                                "name); may hold folders, 2026/scan.pdf",
                            },
                            "priority": {"type": "string", "enum": [p.value for p in Priority]},
                        },
                    }
                }
            }
        }
    },
)
async def upload(request: Request, backend: Annotated[Backend, Depends(_backend)]) -> JSONResponse:
    async with received_files(request, backend) as (saved, form):
        priority = _priority(form.get("priority"))
        report = await anyio.to_thread.run_sync(
            lambda: take_files(backend.store, saved, UPLOAD_SOURCE, priority)
        )
    documents = [
        {
            "name": taken.path,
            "digest": taken.digest,
            "state": taken.state.value,
            "url": f"/api/documents/{taken.digest}",
            "page": f"/documents/{taken.digest}",
        }
        for taken in report.files
    ]
    problems = [{"name": e.path, "error": e.reason} for e in report.run.errors]
    if problems and not documents:
        raise BadRequest("; ".join(f"{p['name']}: {p['error']}" for p in problems))
    return JSONResponse({"documents": documents, "errors": problems}, status_code=202)


@asynccontextmanager
async def received_files(
    request: Request, backend: Backend, field: str = "files"
) -> AsyncIterator[tuple[list[tuple[str, Path]], FormData]]:
    """The files of a multipart request (the parts named ``field``, named by the ``names``
    parts or their file names), each in a temporary file, checked; and the rest of its form.
    Only for a token that may upload (asked before the body is read); UnusableUpload naming
    the first file that cannot be taken."""
    await anyio.to_thread.run_sync(backend.authorize, presented_token(request), Scope.UPLOAD)
    with tempfile.TemporaryDirectory(prefix="bucketdigest-upload-") as folder:
        async with request.form(max_files=MAX_FILES, max_fields=MAX_FILES + 100) as form:
            files = [f for f in form.getlist(field) if isinstance(f, UploadFile)]
            names = [n for n in form.getlist("names") if isinstance(n, str)]
            if not files:
                raise UnusableUpload(f"no file: send each as a part named {field!r}", 400)
            if names and len(names) != len(files):
                raise UnusableUpload(
                    f"{len(names)} names for {len(files)} files: give one per file, or none", 400
                )
            saved = await anyio.to_thread.run_sync(
                _saved, files, names, Path(folder), backend.settings.max_upload
            )
            yield saved, form


def _priority(value: Any) -> Priority:
    if value is None or value == "":
        return Priority.NORMAL
    try:
        return Priority(value)
    except ValueError:
        lanes = ", ".join(p.value for p in Priority)
        raise UnusableUpload(f"priority is one of {lanes}, not {str(value)[:40]!r}", 400) from None


def check_upload(name: str, path: Path, max_bytes: int, which: str = "a file") -> None:
    """UnusableUpload (naming the file and saying why) unless the document called ``name``
    at ``path`` can be taken: a name a store may hold, a type a digester takes, not empty,
    within ``max_bytes``."""
    try:
        keys.check_key(name)
    except InvalidKey as exc:
        raise UnusableUpload(f"{which} ({name[:100]!r}): {exc}", 400) from None
    if (reason := unreadable_type(name)) is not None:
        raise UnusableUpload(f"{name}: {reason}", 415)
    size = path.stat().st_size
    if (reason := refusal_reason(name, size, max_bytes, "the server's --max-upload")) is not None:
        raise UnusableUpload(f"{name}: {reason}", 413 if size else 400)


def _base_name(filename: str) -> str:
    """A part's file name without the folders some clients send with it (LangChain's loader
    sends the whole path, a Windows client ``C:\\...``)."""
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


def _saved(
    files: list[UploadFile], names: list[str], folder: Path, max_bytes: int
) -> list[tuple[str, Path]]:
    """Each file copied to ``folder`` under a name of ours, checked; UnusableUpload naming
    the first that cannot be taken."""
    saved = []
    for number, part in enumerate(files):
        name = names[number] if names else _base_name(part.filename or "")
        path = folder / f"{number:05d}"
        part.file.seek(0)
        with open(path, "wb") as copy:
            shutil.copyfileobj(part.file, copy, 1 << 20)
        check_upload(name, path, max_bytes, f"file {number + 1}")
        saved.append((name, path))
    return saved


class SyncWaitOver(BucketdigestError):
    """A synchronous conversion outlasted ``--sync-wait`` (docling-serve and Unstructured
    answer 504)."""


async def settled(
    backend: Backend,
    digests: Sequence[str],
    later: str,
    read_states: Callable[[], list[DocState | None]] | None = None,
) -> list[DocState | None]:
    """Each document's state (as ``read_states`` reads them, else the queue's) once every one
    is done or failed, waiting for the fleet up to the server's sync wait; SyncWaitOver past
    it, saying what to do ``later`` (the documents stay queued)."""
    deadline = time.monotonic() + backend.settings.sync_wait
    read = read_states or (lambda: [queue.state_of(backend.store, d) for d in digests])
    while True:
        states = await anyio.to_thread.run_sync(read)
        if all(s in (DocState.DONE, DocState.FAILED) for s in states):
            return states
        if time.monotonic() >= deadline:
            raise SyncWaitOver(
                "Conversion is taking too long. The maximum wait time is configured as "
                f"--sync-wait {backend.settings.sync_wait:g} s; the documents stay queued: "
                f"{later}"
            )
        await anyio.sleep(0.25)
