"""docling-serve's v1 API, the parts its clients call (Open WebUI's Docling engine, n8n, the
docling clients, ``DoclingServiceClient``): a document sent to ``/v1/convert/file`` or
``/v1/convert/source`` is stored and queued like an upload, converted by the fleet's workers,
and answered from its result as docling-serve answers (``document`` with ``md_content``,
``json_content`` as a DoclingDocument, ``html_content``, ``text_content``, as ``to_formats``
asks; ``status``, ``errors``, ``processing_time``, ``timings``).

``/v1/chunk/{hybrid,hierarchical}/...`` answer a document's chunks instead
(:mod:`bucketdigest.serve.docling_chunking`).

A task's id holds what it is about (its documents and the formats asked), so any server
fronting the bucket answers for any task, and nothing is kept between requests. A document
already done (the same bytes) answers at once.

Options: ``to_formats``, ``image_export_mode``, ``page_range`` and ``include_images`` shape the
answer, and so does ``do_ocr`` (false: the text OCR read is left out). ``ocr_lang`` and
``force_ocr`` shape the conversion: a document is queued with them as settings of its own, and
one done without them is converted again with them (the same bytes have one result: the last
request's). The others are accepted and left aside.
"""

from __future__ import annotations

import base64
import binascii
import html
import io
import json
import re
import tempfile
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlparse

import anyio
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import JSONResponse, Response

from bucketdigest.ingestor.inbox import UPLOAD_SOURCE, take_files
from bucketdigest.serve.backend import Backend, BadRequest
from bucketdigest.serve.conversion import conversion_states
from bucketdigest.serve.docling_chunking import (
    CHUNKERS,
    ChunkerChoice,
    ChunkingRefused,
    document_chunks,
)
from bucketdigest.serve.documents import read_pages
from bucketdigest.serve.html import files_url, markdown_html, served_markdown
from bucketdigest.serve.uploads import (
    UnusableUpload,
    check_upload,
    presented_token,
    received_files,
    settled,
)
from bucketdigest.shared import keys, queue
from bucketdigest.shared.docling_document import docling_document
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.fetch import FetchSettings, fetch
from bucketdigest.shared.filetypes import ext_of_mime
from bucketdigest.shared.ocr_languages import UnknownLanguage, tesseract_languages
from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.result import DOCUMENT, DOCUMENT_STRUCTURE, ResultZip, merged_page
from bucketdigest.shared.tokens import Scope

router = APIRouter(tags=["docling-serve"])

COMPATIBLE_VERSION = "1.38.2"
"""The docling-serve release whose API this follows."""
FORMATS = {
    "md": "md_content",
    "json": "json_content",
    "html": "html_content",
    "text": "text_content",
}
"""The ``to_formats`` we make, and where each goes in the answer (``doctags`` is not made)."""
IMAGE_MODES = ("placeholder", "embedded", "referenced")
MAX_WAIT = 60.0
"""The longest a status poll waits (``wait``)."""
MAX_TASK_DOCUMENTS = 100
"""Documents one conversion request may hold: its task id names them all."""
_TASK = re.compile(r"bd1\.[A-Za-z0-9_-]{8,200000}")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Task:
    """What a task is about: its documents (hash and name) and how to answer."""

    digests: tuple[str, ...]
    names: tuple[str, ...]
    formats: tuple[str, ...] = ("md",)
    images: str = "placeholder"
    pages: tuple[int, int] = (1, 1 << 31)
    zipped: bool = False
    """Answered as a zip even for one document (``target_type: zip``)."""
    started: float = field(default_factory=time.time)
    ocr: bool = True
    """``do_ocr``: false leaves out the text OCR read."""
    pictures: bool = True
    """``include_images``: false answers every picture as a placeholder."""
    wanted: DocumentSettings | None = None
    """The conversion the request asked for (``ocr_lang``, ``force_ocr``)."""
    chunking: ChunkerChoice | None = None
    """A chunking task's chunker (``/v1/chunk/...``); None for a conversion."""

    @property
    def task_id(self) -> str:
        data = [
            self.digests,
            self.names,
            self.formats,
            self.images,
            self.pages,
            self.zipped,
            round(self.started, 3),
            self.ocr,
            self.pictures,
            self.wanted.chosen() if self.wanted else None,
            self.chunking.record() if self.chunking else None,
        ]
        text = json.dumps(data, separators=(",", ":")).encode()
        return "bd1." + base64.urlsafe_b64encode(text).decode().rstrip("=")

    @classmethod
    def parse(cls, task_id: str) -> Task:
        """The task ``task_id`` names; UnknownTask for one this server never gave out."""
        if not _TASK.fullmatch(task_id):
            raise UnknownTask(f"no task {task_id[:80]!r}")
        body = task_id[4:]
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            if len(fields) == 10:  # given out before chunking tasks
                fields.append(None)
            digests, names, formats, images, pages, zipped, started, ocr, pictures = fields[:9]
            wanted, chunk = fields[9:]
            return cls(
                tuple(keys.check_hash(str(d)) for d in digests),
                tuple(str(n) for n in names),
                tuple(f for f in formats if f in FORMATS),
                images if images in IMAGE_MODES else "placeholder",
                (int(pages[0]), int(pages[1])),
                zipped is True,
                float(started),
                ocr is not False,
                pictures is not False,
                DocumentSettings.from_json(json.dumps(wanted).encode()) if wanted else None,
                ChunkerChoice.recorded(chunk) if chunk is not None else None,
            )
        except (ValueError, TypeError, IndexError, binascii.Error, BucketdigestError):
            raise UnknownTask(f"no task {task_id[:80]!r}") from None


class UnknownTask(BucketdigestError):
    """A task id this server never gave out (docling-serve answers 404)."""


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
    return await _answer_when_done(backend, task)


@router.post("/v1/convert/file/async", summary="docling-serve: convert files as a task")
async def convert_file_async(request: Request, backend: BackendDep) -> dict[str, Any]:
    task = await _file_task(request, backend)
    return await anyio.to_thread.run_sync(_task_status, backend, task)


@router.post("/v1/convert/source", summary="docling-serve: convert URLs or base64 files, waiting")
async def convert_source(
    request: Request, backend: BackendDep, body: Annotated[dict[str, Any], Body()]
) -> Response:
    task = await anyio.to_thread.run_sync(_source_task, backend, presented_token(request), body)
    return await _answer_when_done(backend, task)


@router.post("/v1/convert/source/async", summary="docling-serve: convert URLs or files as a task")
async def convert_source_async(
    request: Request, backend: BackendDep, body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    task = await anyio.to_thread.run_sync(_source_task, backend, presented_token(request), body)
    return await anyio.to_thread.run_sync(_task_status, backend, task)


@router.post("/v1/chunk/{chunker}/file", summary="docling-serve: chunk files, waiting for them")
async def chunk_file(request: Request, backend: BackendDep, chunker: str) -> Response:
    task = await _file_task(request, backend, chunker)
    return await _answer_when_done(backend, task)


@router.post("/v1/chunk/{chunker}/file/async", summary="docling-serve: chunk files as a task")
async def chunk_file_async(request: Request, backend: BackendDep, chunker: str) -> dict[str, Any]:
    task = await _file_task(request, backend, chunker)
    return await anyio.to_thread.run_sync(_task_status, backend, task)


@router.post("/v1/chunk/{chunker}/source", summary="docling-serve: chunk URLs or base64 files")
async def chunk_source(
    request: Request,
    backend: BackendDep,
    chunker: str,
    body: Annotated[dict[str, Any], Body()],
) -> Response:
    token = presented_token(request)
    task = await anyio.to_thread.run_sync(_source_task, backend, token, body, chunker)
    return await _answer_when_done(backend, task)


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
    return await anyio.to_thread.run_sync(_task_status, backend, task)


@router.get("/v1/status/poll/{task_id}", summary="docling-serve: a task's status")
async def poll(
    backend: BackendDep,
    task_id: str,
    wait: Annotated[float, Query(ge=0, description="Seconds to wait for it to end")] = 0.0,
) -> dict[str, Any]:
    task = Task.parse(task_id)
    deadline = time.monotonic() + min(wait, MAX_WAIT)
    while True:
        status = await anyio.to_thread.run_sync(_task_status, backend, task)
        if status["task_status"] in ("success", "partial_success", "failure"):
            return status
        if time.monotonic() >= deadline:
            return status
        await anyio.sleep(min(0.25, max(deadline - time.monotonic(), 0)))


@router.get("/v1/result/{task_id}", summary="docling-serve: a task's result")
async def result(backend: BackendDep, task_id: str) -> Response:
    task = Task.parse(task_id)
    states = await anyio.to_thread.run_sync(_states, backend, task)
    if any(s not in (DocState.DONE, DocState.FAILED) for s in states):
        raise UnknownTask("Task result not found. Please wait for a completion status.")
    return await anyio.to_thread.run_sync(_answer, backend, task, states)


# making tasks


async def _file_task(request: Request, backend: Backend, chunker: str | None = None) -> Task:
    """A task for the files of a form (a chunking request's conversion options prefixed
    ``convert_``, its chunker's ``chunking_``)."""
    async with received_files(request, backend) as (saved, form):
        prefix = "convert_" if chunker else ""
        task = _task({key: form.getlist(prefix + key) for key in _OPTIONS}, form.get("target_type"))
        if chunker is not None:
            chunking = {
                key.removeprefix("chunking_"): form.get(key)
                for key in form
                if key.startswith("chunking_")
            }
            task = _chunking(task, chunker, chunking, form.get("include_converted_doc"))
        _few_enough(len(saved))
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
    _few_enough(len(sources))
    named = "convert_options" if chunker else "options"
    options = body.get(named) if isinstance(body.get(named), dict) else {}
    target = body.get("target") if isinstance(body.get("target"), dict) else {}
    task = _task({key: _as_list(options.get(key)) for key in _OPTIONS}, target.get("kind"))
    if chunker is not None:
        chunking = body.get("chunking_options")
        chunking = chunking if isinstance(chunking, dict) else {}
        task = _chunking(task, chunker, chunking, body.get("include_converted_doc"))
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


def _chunking(task: Task, chunker: str, options: Mapping[str, Any], converted: Any) -> Task:
    """``task`` made a chunking task (answered in the body, as docling-serve does)."""
    if task.zipped:
        raise UnusableUpload("a chunking task is answered in the body: target inbody", 400)
    if chunker not in CHUNKERS:
        raise UnknownTask(f"no chunker {chunker[:40]!r}: the chunkers are {', '.join(CHUNKERS)}")
    try:
        converted_doc = _flag(
            {"include_converted_doc": _as_list(converted)}, "include_converted_doc", False
        )
        choice = ChunkerChoice.asked(chunker, options, converted_doc)
    except ChunkingRefused as exc:
        raise UnusableUpload(f"chunking_options: {exc}", 400) from None
    return replace(task, formats=("json",), chunking=choice)


def _few_enough(count: int) -> None:
    if count > MAX_TASK_DOCUMENTS:
        raise UnusableUpload(
            f"{count} documents in one request: at most {MAX_TASK_DOCUMENTS}; send them in several",
            413,
        )


def _zipped(target: Any) -> bool:
    """Whether a target asks for a zip; UnusableUpload for the targets we do not have (a
    presigned URL, S3: the client then falls back to the answer in the body)."""
    if target in (None, "", "inbody"):
        return False
    if target == "zip":
        return True
    raise UnusableUpload(
        f"target_type: Input should be 'inbody' or 'zip', not {str(target)[:40]!r} "
        "(presigned_url and s3 targets need artifact storage to be configured)",
        400,
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


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


_OPTIONS = (
    "to_formats",
    "image_export_mode",
    "page_range",
    "include_images",
    "do_ocr",
    "force_ocr",
    "ocr_lang",
)
"""The request's options we honour."""


def _task(given: Mapping[str, list[Any]], target: Any) -> Task:
    """A task (its documents still to add) as the request's options ask."""
    ocr = _flag(given, "do_ocr", True)
    try:
        language = tesseract_languages(str(t) for t in given.get("ocr_lang") or [])
    except UnknownLanguage as exc:
        raise UnusableUpload(f"ocr_lang: {exc}", 400) from None
    force = ocr and _flag(given, "force_ocr", False)
    wanted = DocumentSettings(language, force or None) if ocr and (language or force) else None
    return Task(
        (),
        (),
        *_options(given),
        zipped=_zipped(target),
        ocr=ocr,
        pictures=_flag(given, "include_images", True),
        wanted=wanted,
    )


def _flag(given: Mapping[str, list[Any]], name: str, default: bool) -> bool:
    """A boolean option: JSON's true or false, or a form's ``true``/``false``."""
    values = given.get(name) or []
    if not values:
        return default
    value = values[0]
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UnusableUpload(f"{name} is true or false, not {str(value)[:40]!r}", 400)


def _options(given: Mapping[str, list[Any]]) -> tuple[tuple[str, ...], str, tuple[int, int]]:
    """``to_formats``, ``image_export_mode`` and ``page_range`` as the answer uses them."""
    formats = tuple(
        dict.fromkeys(str(f) for f in given.get("to_formats") or ["md"] if str(f) in FORMATS)
    ) or ("md",)
    modes = given.get("image_export_mode") or ["placeholder"]
    images = str(modes[0]) if str(modes[0]) in IMAGE_MODES else "placeholder"
    return formats, images, _page_range(given.get("page_range") or [])


_LAST_PAGE = 1 << 31
"""A page number past any document's (the end of ``page_range`` when none is given)."""


def _whole_number(value: Any) -> int | None:
    """``value`` as a whole number: a JSON integer (not ``true``) or a form field's digits."""
    if type(value) is int:
        return value
    text = value.strip() if isinstance(value, str) else ""
    if len(text) <= 40 and text.lstrip("+-").isdecimal():  # 40: far past sys.maxsize
        return int(text)
    return None


def _page_range(bounds: list[Any]) -> tuple[int, int]:
    """``page_range``'s first and last page (numbers below 1 read as 1, beyond any document
    as :data:`_LAST_PAGE`): two whole numbers, as JSON numbers or form fields; UnusableUpload
    (400) for anything else, or a first page after the last."""
    if not bounds:
        return 1, _LAST_PAGE
    numbers = [_whole_number(b) for b in bounds]
    if len(numbers) != 2 or None in numbers:
        raise UnusableUpload(f"page_range is two page numbers, not {bounds!r:.80}", 400)
    first, last = (min(max(1, n), _LAST_PAGE) for n in numbers if n is not None)
    if first > last:
        raise UnusableUpload(f"page_range starts at page {first}, after its last, {last}", 400)
    return first, last


# answering


def _states(backend: Backend, task: Task) -> list[DocState | None]:
    return conversion_states(backend, task.digests, task.wanted)


def _task_status(backend: Backend, task: Task) -> dict[str, Any]:
    states = _states(backend, task)
    if any(s in (DocState.TODO, None) for s in states):
        word = "pending"
    elif any(s is DocState.PROCESSING for s in states):
        word = "started"
    elif all(s is DocState.DONE for s in states):
        word = "success"
    elif any(s is DocState.DONE for s in states):
        word = "partial_success"
    else:
        word = "failure"
    done = sum(s in (DocState.DONE, DocState.FAILED) for s in states)
    return {
        "task_id": task.task_id,
        "task_type": "chunk" if task.chunking else "convert",
        "task_status": word,
        "task_position": None if word != "pending" else 0,
        "task_meta": {
            "num_docs": len(states),
            "num_processed": done,
            "num_succeeded": sum(s is DocState.DONE for s in states),
            "num_failed": sum(s is DocState.FAILED for s in states),
        },
    }


async def _answer_when_done(backend: Backend, task: Task) -> Response:
    """The answer once every document of ``task`` is done or failed (504 past the sync
    wait, as docling-serve answers; the documents stay queued)."""
    states = await settled(
        backend,
        task.digests,
        f"poll /v1/status/poll/{task.task_id}",
        lambda: _states(backend, task),
    )
    return await anyio.to_thread.run_sync(_answer, backend, task, states)


def _answer(backend: Backend, task: Task, states: list[DocState | None]) -> Response:
    """The answer for ``task``, its documents in ``states`` (each done or failed)."""
    documents = [
        _document(backend, task, d, n, s)
        for d, n, s in zip(task.digests, task.names, states, strict=True)
    ]
    took = round(time.time() - task.started, 3)
    if task.chunking is not None:
        return JSONResponse(_chunked(documents, task.chunking, took))
    if len(documents) == 1 and not task.zipped:
        document, status, errors = documents[0]
        return JSONResponse(
            {
                "document": document,
                "status": status,
                "errors": errors,
                "processing_time": took,
                "timings": {},
            }
        )
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for (document, _, _), name in zip(documents, task.names, strict=True):
            stem = Path(name).stem or "document"
            for form, member in (
                ("md_content", f"{stem}.md"),
                ("text_content", f"{stem}.txt"),
                ("html_content", f"{stem}.html"),
            ):
                if isinstance(document.get(form), str):
                    out.writestr(member, document[form])
            if document.get("json_content") is not None:
                out.writestr(f"{stem}.json", json.dumps(document["json_content"]))
    return Response(
        archive.getvalue(),
        media_type="application/zip",
        headers={"Content-Disposition": 'attachment; filename="converted_docs.zip"'},
    )


def _chunked(
    documents: list[tuple[dict[str, Any], str, list[dict[str, Any]]]],
    choice: ChunkerChoice,
    took: float,
) -> dict[str, Any]:
    """docling-serve's ``ChunkDocumentResponse`` for ``documents`` (each answered with its
    ``json_content``)."""
    from docling_core.types.doc import DoclingDocument

    chunks, exported = [], []
    for document, status, errors in documents:
        content = {"filename": document["filename"]}
        if status == "success":
            json_content = document["json_content"]
            made = DoclingDocument.model_validate(json_content)
            chunks += document_chunks(made, document["filename"], choice)
            if choice.converted_doc:
                content["json_content"] = json_content
        exported.append(
            {"kind": "ExportResult", "content": content, "status": status, "errors": errors}
        )
    return {"chunks": chunks, "documents": exported, "processing_time": took}


def _document(
    backend: Backend, task: Task, digest: str, name: str, state: DocState | None
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    """One document's part of the answer, its status and errors."""
    filename = name.rsplit("/", 1)[-1]
    if state is not DocState.DONE:
        failure = queue.read_failure(backend.store, digest) if state is DocState.FAILED else None
        reason = failure.error.split("\n")[0] if failure else f"the document is {state}"
        error = {
            "component_type": "document_backend",
            "module_name": "bucketdigest",
            "error_message": reason,
        }
        return {"filename": filename}, "failure", [error]
    mode = task.images if task.pictures else "placeholder"
    with ResultZip(backend.cache.zip_bytes(digest)) as result:
        markdown = result.text(DOCUMENT)
        structure = result.json(DOCUMENT_STRUCTURE, {})
        if task.pages != (1, 1 << 31) or not task.ocr:
            last = min(task.pages[1], len(result.pages()))
            pages = read_pages(backend.cache, digest, range(task.pages[0], last + 1))
            markdown = "\n\n".join(
                p.text if task.ocr else merged_page(p.markdown, p.linked) for p in pages
            )
            structure = _only_pages(structure, task.pages, task.ocr)
        images = (
            {m: result.read(m) for m in result.names() if m.startswith("images/")}
            if mode == "embedded"
            else {}
        )
    answer: dict[str, Any] = {"filename": filename}
    markdown = _with_images(markdown, mode, digest, images)
    for form in task.formats:
        if form == "md":
            answer["md_content"] = markdown
        elif form == "text":
            answer["text_content"] = plain_text(markdown)
        elif form == "html":
            body = markdown_html(markdown, files_url(digest))
            answer["html_content"] = (
                "<!doctype html><html><head><meta charset=utf-8>"
                f"<title>{html.escape(filename)}</title></head><body>{body}</body></html>"
            )
        elif form == "json":
            answer["json_content"] = json.loads(docling_document(structure, name).model_dump_json())
    return answer, "success", []


def _only_pages(structure: dict[str, Any], pages: tuple[int, int], ocr: bool) -> dict[str, Any]:
    """``structure`` (``document.json``) with pages ``pages`` only; without ``ocr``, the
    blocks of pages OCR read left out."""
    kept = [
        p
        for p in structure.get("pages") or []
        if isinstance(p, dict)
        and isinstance(p.get("page"), int)
        and pages[0] <= p["page"] <= pages[1]
    ]
    read = {p["page"] for p in kept if ocr or p.get("words") != "ocr"}
    blocks = [b for b in structure.get("blocks") or [] if isinstance(b, dict)]
    return {**structure, "pages": kept, "blocks": [b for b in blocks if b.get("page") in read]}


def _with_images(markdown: str, mode: str, digest: str, images: Mapping[str, bytes | None]) -> str:
    """Image links as ``image_export_mode`` asks: a placeholder (docling's ``<!-- image -->``),
    the image inline as a data URI, or a link to the image on this server."""
    if mode == "referenced":
        return served_markdown(markdown, files_url(digest))
    if mode == "placeholder":
        return _IMAGE.sub("<!-- image -->", markdown)

    def inline(match: re.Match[str]) -> str:
        target = match.group(2).split("/images/", 1)[-1].removeprefix("images/")
        data = images.get(f"images/{target}")
        if not data:
            return "<!-- image -->"
        kind = "png" if data[:4] == b"\x89PNG" else "jpeg"
        return f"![{match.group(1)}](data:image/{kind};base64,{base64.b64encode(data).decode()})"

    return _IMAGE.sub(inline, markdown)
