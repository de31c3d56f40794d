"""Unstructured's partition API (``POST /general/v0/general``), as the ``unstructured-client``
SDK, LangChain's ``UnstructuredLoader(partition_via_api=True)`` and LlamaIndex's readers call
it: the files are stored and queued like uploads, converted by the fleet, and answered as
Unstructured's elements made from the result's blocks.

Each block becomes an element of its type (a heading a ``Title``, a paragraph
``NarrativeText``, a table a ``Table`` with ``text_as_html``, a running line a ``Header`` or
``Footer``...), in reading order, with a stable ``element_id``, its page (counted from
``starting_page_number``, so the SDK's page batches reassemble in place), the heading it falls
under as ``parent_id``, and with ``coordinates=true`` its box on the page in points.
``chunking_strategy`` (``basic``, ``by_title``) joins them into chunks with Unstructured's
options (:mod:`bucketdigest.serve.unstructured_chunking`). ``languages`` are the languages OCR
reads the document in, and the ``ocr_only`` strategy reads every page of a PDF by OCR
(:mod:`bucketdigest.serve.conversion`).
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import FormData

from bucketdigest.ingestor.inbox import UPLOAD_SOURCE, take_files
from bucketdigest.serve.backend import Backend
from bucketdigest.serve.conversion import conversion_states
from bucketdigest.serve.guards import SPLIT_COLLECTION_PATH, UNSTRUCTURED_PATH
from bucketdigest.serve.unstructured_chunking import (
    MAX_CHARACTERS,
    ChunkingError,
    ChunkingOptions,
    chunked,
)
from bucketdigest.serve.uploads import UnusableUpload, received_files, settled
from bucketdigest.shared import queue
from bucketdigest.shared.filetypes import file_type
from bucketdigest.shared.ocr_languages import UnknownLanguage, tesseract_languages
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.result import DOCUMENT_STRUCTURE, ResultZip

router = APIRouter(tags=["Unstructured"])

_TYPES = {
    "paragraph": "NarrativeText",
    "list_item": "ListItem",
    "table": "Table",
    "picture": "Image",
    "caption": "FigureCaption",
    "footnote": "Footer",
    "formula": "Formula",
    "code": "CodeSnippet",
}


@dataclass(frozen=True)
class PartitionOptions:
    coordinates: bool = False
    page_breaks: bool = False
    languages: tuple[str, ...] = ("eng",)
    first_page: int = 1
    chunking: ChunkingOptions | None = None
    wanted: DocumentSettings | None = None
    """The conversion asked for: OCR in ``languages`` when given, ``ocr_only``."""

    @classmethod
    def from_form(cls, form: FormData) -> PartitionOptions:
        def flag(name: str, default: bool = False) -> bool:
            given = str(form.get(name, "")).strip().lower()
            return given in ("true", "1", "yes") if given else default

        def number(name: str) -> int | None:
            value = form.get(name)
            if value in (None, ""):
                return None
            try:
                return int(str(value))
            except ValueError:
                raise UnusableUpload(
                    f"{name} is a whole number, not {str(value)[:40]!r}", 422
                ) from None

        strategy = str(form.get("chunking_strategy") or "").strip()
        try:
            chunking = (
                ChunkingOptions(
                    strategy[:40],
                    _given(number("max_characters"), MAX_CHARACTERS),
                    number("new_after_n_chars"),
                    number("combine_under_n_chars"),
                    _given(number("overlap"), 0),
                    flag("overlap_all"),
                    flag("multipage_sections", default=True),
                )
                if strategy
                else None
            )
        except ChunkingError as exc:
            raise UnusableUpload(str(exc), 422) from None
        first_page = _given(number("starting_page_number"), 1)
        if first_page < 1:
            raise UnusableUpload(f"starting_page_number must be 1 or more, not {first_page}", 422)
        languages = tuple(str(v) for v in form.getlist("languages") if str(v).strip())
        output = str(form.get("output_format") or "application/json")
        if output != "application/json":
            raise UnusableUpload(
                f"output_format {output[:40]!r}: only application/json is made", 422
            )
        try:
            language = tesseract_languages(languages)
        except UnknownLanguage as exc:
            raise UnusableUpload(f"languages: {exc}", 422) from None
        force = str(form.get("strategy") or "").strip() == "ocr_only"
        return cls(
            wanted=DocumentSettings(language, force or None) if language or force else None,
            coordinates=flag("coordinates"),
            page_breaks=flag("include_page_breaks"),
            languages=languages or ("eng",),
            first_page=first_page,
            chunking=chunking,
        )


def _given(value: int | None, default: int) -> int:
    return default if value is None else value


def _backend(request: Request) -> Backend:
    return request.app.state.backend


@router.post(UNSTRUCTURED_PATH, summary="Unstructured: partition documents into elements")
async def partition(
    request: Request, backend: Annotated[Backend, Depends(_backend)]
) -> JSONResponse:
    async with received_files(request, backend) as (saved, form):
        options = PartitionOptions.from_form(form)
        report = await anyio.to_thread.run_sync(
            lambda: take_files(backend.store, saved, UPLOAD_SOURCE, settings=options.wanted)
        )
    digests = [f.digest for f in report.files]
    states = await settled(
        backend,
        digests,
        "send the file again later",
        lambda: conversion_states(backend, digests, options.wanted),
    )
    answers = []
    for taken, state in zip(report.files, states, strict=True):
        if state is not DocState.DONE:
            failure = await anyio.to_thread.run_sync(
                queue.read_failure, backend.store, taken.digest
            )
            reason = failure.error.split("\n")[0] if failure else "it could not be converted"
            raise UnusableUpload(f"{taken.path}: {reason}", 422)
        structure = await anyio.to_thread.run_sync(_structure, backend, taken.digest)
        answers.append(partition_elements(structure, taken.digest, taken.path, options))
    return JSONResponse(answers[0] if len(answers) == 1 else answers)


@router.get(SPLIT_COLLECTION_PATH, include_in_schema=False)
def split_collection() -> list[Any]:
    """Answered empty: the SDK asks it before sending a split PDF's page batches, and
    gathers their elements itself."""
    return []


def _structure(backend: Backend, digest: str) -> dict[str, Any]:
    with ResultZip(backend.cache.zip_bytes(digest)) as result:
        found = result.json(DOCUMENT_STRUCTURE, {})
    return found if isinstance(found, dict) else {}


def partition_elements(
    structure: Mapping[str, Any], digest: str, name: str, options: PartitionOptions
) -> list[dict[str, Any]]:
    """Unstructured's elements for the result whose ``document.json`` is ``structure``."""
    elements = list(_elements(structure, digest, name, options))
    if options.chunking is None:
        return elements

    def make(kind: str, text: str, seed: str, metadata: dict[str, Any]) -> dict[str, Any]:
        return _element(kind, text, digest, seed, metadata)

    try:
        return chunked(elements, options.chunking, make)
    except ChunkingError as exc:
        raise UnusableUpload(str(exc), 422) from None


def _elements(
    structure: Mapping[str, Any], digest: str, name: str, options: PartitionOptions
) -> Iterator[dict[str, Any]]:
    sizes = {
        p["page"]: (p.get("width"), p.get("height"))
        for p in structure.get("pages") or []
        if isinstance(p, dict) and isinstance(p.get("page"), int)
    }
    filename = name.rsplit("/", 1)[-1]
    try:
        filetype = file_type(filename.rsplit(".", 1)[-1]).mime
    except ValueError:
        filetype = "application/octet-stream"
    headings: list[tuple[int, str]] = []
    previous_page = None
    shift = options.first_page - 1
    for block in structure.get("blocks") or []:
        if not isinstance(block, dict) or not isinstance(block.get("text"), str):
            continue
        page = block.get("page") if isinstance(block.get("page"), int) else 1
        if options.page_breaks and previous_page is not None and page != previous_page:
            yield _element("PageBreak", "", digest, f"break-{page}", {
                "filename": filename, "filetype": filetype, "page_number": previous_page + shift,
                "languages": list(options.languages),
            })  # fmt: skip
        previous_page = page
        kind = block.get("kind")
        level = block.get("level") if isinstance(block.get("level"), int) else 1
        metadata: dict[str, Any] = {
            "filename": filename,
            "filetype": filetype,
            "page_number": page + shift,
            "languages": list(options.languages),
        }
        parents = [h for h in headings if kind != "heading" or h[0] < level]
        if parents:
            metadata["parent_id"] = parents[-1][1]
        if kind == "table":
            metadata["text_as_html"] = _table_html(block.get("rows"))
        if options.coordinates and (box := _coordinates(block, sizes)) is not None:
            metadata["coordinates"] = box
        if kind == "heading":
            element_type = "Title"
        elif kind == "running":
            element_type = _header_or_footer(block, sizes)
        else:
            element_type = _TYPES.get(str(kind), "UncategorizedText")
        text = block["text"]
        if kind == "picture":
            text = block.get("caption") if isinstance(block.get("caption"), str) else ""
        element = _element(element_type, text, digest, str(block.get("id")), metadata)
        if kind == "heading":
            headings = [h for h in headings if h[0] < level] + [(level, element["element_id"])]
        yield element


def _element(
    element_type: str, text: str, digest: str, block_id: str, metadata: dict[str, Any]
) -> dict[str, Any]:
    """An element; its id is the same for the same block of the same document and page
    offset (so a batch sent again gets the ids it got before)."""
    seed = f"{digest}:{block_id}:{metadata.get('page_number')}"
    return {
        "type": element_type,
        "element_id": hashlib.sha256(seed.encode()).hexdigest()[:32],
        "text": text,
        "metadata": metadata,
    }


def _coordinates(
    block: Mapping[str, Any], sizes: Mapping[int, tuple[Any, Any]]
) -> dict[str, Any] | None:
    for region in block.get("regions") or []:
        if not isinstance(region, dict):
            continue
        corners = [region.get(k) for k in ("x0", "y0", "x1", "y1")]
        width, height = sizes.get(region.get("page"), (None, None))  # type: ignore[arg-type]
        if all(isinstance(c, int | float) for c in corners) and width and height:
            x0, y0, x1, y1 = (round(float(c), 2) for c in corners)  # type: ignore[arg-type]
            return {
                "points": [[x0, y0], [x0, y1], [x1, y1], [x1, y0]],
                "system": "PixelSpace",
                "layout_width": width,
                "layout_height": height,
            }
    return None


def _header_or_footer(block: Mapping[str, Any], sizes: Mapping[int, tuple[Any, Any]]) -> str:
    box = _coordinates(block, sizes)
    if box is not None and box["points"][0][1] > box["layout_height"] / 2:
        return "Footer"
    return "Header"


def _table_html(rows: Any) -> str:
    """A table's cells as HTML (header cells as ``th``, spans kept), text escaped."""
    lines = []
    for row in rows if isinstance(rows, list) else []:
        cells = []
        for cell in row if isinstance(row, list) else []:
            if not isinstance(cell, dict):
                continue
            tag = "th" if cell.get("header") is True else "td"
            spans = "".join(
                f' {attr}="{cell[key]}"'
                for key, attr in (("colspan", "colspan"), ("rowspan", "rowspan"))
                if isinstance(cell.get(key), int) and cell[key] > 1
            )
            cells.append(f"<{tag}{spans}>{html.escape(str(cell.get('text', '')))}</{tag}>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table>{''.join(lines)}</table>"
