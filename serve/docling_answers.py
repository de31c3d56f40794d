"""docling-serve's answers to a task, made from its documents' results: each document in the
forms ``to_formats`` asks (Markdown, DoclingDocument JSON, HTML, text; images as placeholders,
inline or linked), several in a zip, or a chunking task's chunks; and the task's status."""

from __future__ import annotations

import base64
import html
import io
import json
import re
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from fastapi.responses import JSONResponse, Response

from bucketdigest.serve.backend import Backend
from bucketdigest.serve.conversion import conversion_states
from bucketdigest.serve.docling_chunking import ChunkerChoice, document_chunks
from bucketdigest.serve.docling_tasks import ALL_PAGES_END, Task
from bucketdigest.serve.documents import read_pages
from bucketdigest.serve.html import files_url, markdown_html, served_markdown
from bucketdigest.serve.uploads import settled
from bucketdigest.shared import queue
from bucketdigest.shared.docling_document import docling_document
from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.result import DOCUMENT, DOCUMENT_STRUCTURE, ResultZip, merged_page

_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def task_states(backend: Backend, task: Task) -> list[DocState | None]:
    """Where each of ``task``'s documents stands, as the conversion it asked for."""
    return conversion_states(backend, task.digests, task.wanted)


def task_status(backend: Backend, task: Task) -> dict[str, Any]:
    """docling-serve's ``TaskStatusResponse`` for ``task``."""
    states = task_states(backend, task)
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


async def answer_when_done(backend: Backend, task: Task) -> Response:
    """The answer once every document of ``task`` is done or failed (504 past the sync
    wait, as docling-serve answers; the documents stay queued)."""
    states = await settled(
        backend,
        task.digests,
        f"poll /v1/status/poll/{task.task_id}",
        lambda: task_states(backend, task),
    )
    return await anyio.to_thread.run_sync(answer, backend, task, states)


def answer(backend: Backend, task: Task, states: list[DocState | None]) -> Response:
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
                "document": _as_json(document),
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
                out.writestr(f"{stem}.json", document["json_content"].model_dump_json())
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
    chunks, exported = [], []
    for document, status, errors in documents:
        content = {"filename": document["filename"]}
        if status == "success":
            chunks += document_chunks(document["json_content"], document["filename"], choice)
            if choice.converted_doc:
                content["json_content"] = _as_json(document)["json_content"]
        exported.append(
            {"kind": "ExportResult", "content": content, "status": status, "errors": errors}
        )
    return {"chunks": chunks, "documents": exported, "processing_time": took}


def _as_json(document: dict[str, Any]) -> dict[str, Any]:
    """A document's part of the answer as JSON data (its DoclingDocument dumped)."""
    if document.get("json_content") is None:
        return document
    return document | {"json_content": json.loads(document["json_content"].model_dump_json())}


def _document(
    backend: Backend, task: Task, digest: str, name: str, state: DocState | None
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    """One document's part of the answer, its status and errors; ``json_content`` is the
    DoclingDocument itself (the chunkers read it; :func:`_as_json` dumps it for the body)."""
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
        if task.pages != (1, ALL_PAGES_END) or not task.ocr:
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
            answer["json_content"] = docling_document(structure, name)
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
