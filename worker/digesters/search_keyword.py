"""search-keyword: ``chunks.jsonl``, page-level chunks ready for a keyword index, and
``document.json``, the blocks they are cut from (:mod:`bucketdigest.worker.document_blocks`).

One JSON object per line: ``id`` (``<hash>:<page>:<part>``), ``document``, ``page``, ``part``,
``headings`` (the path of Markdown headings the chunk sits under, outermost first), ``text``
(plain text, Markdown syntax removed), ``blocks`` (the ids of its blocks in ``document.json``)
and ``regions`` (theirs, on the page). A page longer than ``MAX_CHARS`` is cut between blocks
into parts; a table longer than that is cut between rows, its header row repeated in every
piece; an empty page gives no chunk. Running heads and pictures without words give none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.jsonlines import dumps_lines
from bucketdigest.shared.pagetext import document_pages
from bucketdigest.shared.result import CHUNKS, DOCUMENT_STRUCTURE
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.document_blocks import document_structure, page_blocks

MAX_CHARS = 4000


@dataclass(frozen=True)
class Chunk:
    page: int
    part: int
    headings: tuple[str, ...]
    text: str
    blocks: tuple[str, ...] = ()
    regions: tuple[dict[str, float], ...] = field(default_factory=tuple)


def _pieces(block: dict[str, Any], max_chars: int) -> Iterator[str]:
    """A block's text as chunks hold it: a long table in pieces of whole rows, each with the
    header row first."""
    if block["kind"] != "table" or len(block["text"]) <= max_chars:
        yield block["text"]
        return
    rows = [" | ".join(c["text"] for c in row) for row in block["rows"]]
    header = [r for r, row in zip(rows, block["rows"], strict=True) if row and row[0]["header"]]
    body = rows[len(header) :]
    head = "\n".join(header)
    piece: list[str] = []
    for row in body:
        if piece and len(head) + sum(len(r) + 1 for r in piece) + len(row) > max_chars:
            yield "\n".join([head, *piece]).strip()
            piece = []
        piece.append(row)
    if piece:
        yield "\n".join([head, *piece]).strip()


def block_chunks(blocks: list[dict[str, Any]], max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Cut ``document.json``'s blocks into chunks, each with the heading path in force where
    it starts, the blocks it holds and their regions."""
    path: list[tuple[int, str]] = []
    chunks: list[Chunk] = []
    page, part = 0, 0
    texts: list[str] = []
    ids: list[str] = []
    regions: list[dict[str, float]] = []
    start_path: tuple[str, ...] | None = None

    def close() -> None:
        nonlocal texts, ids, regions, start_path, part
        if texts:
            part += 1
            chunks.append(
                Chunk(page, part, start_path or (), "\n\n".join(texts), tuple(ids), tuple(regions))
            )
        texts, ids, regions, start_path = [], [], [], None

    for block in blocks:
        if block["kind"] == "running":
            continue
        if block["page"] != page:
            close()
            page, part = block["page"], 0
        if block["kind"] == "heading":
            level = block.get("level", 1)
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, block["text"])]
        for text in _pieces(block, max_chars):
            if not text:
                continue
            if texts and sum(len(t) + 2 for t in texts) + len(text) > max_chars:
                close()
            if start_path is None:
                start_path = tuple(t for _, t in path)
            texts.append(text)
            if block["id"] not in ids:
                ids.append(block["id"])
                regions.extend(block["regions"])
    close()
    return chunks


def page_chunks(pages: list[str], max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Cut Markdown pages into chunks (through their blocks, without regions)."""
    found = (b for number, page in enumerate(pages, start=1) for b in page_blocks(page, number))
    return block_chunks([b.as_json(n) for n, b in enumerate(found, start=1)], max_chars)


class SearchKeyword(Digester):
    name = "search-keyword"
    label = "Search chunks"
    description = (
        "Page-level chunks with page numbers and heading paths, as chunks.jsonl "
        "(one JSON object a line) for a keyword index."
    )
    version = "2"
    outputs = ("chunks",)
    needs = ("markdown", "ocr", "web-page")
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        paged = ctx.source if ctx.file.kind is FileKind.DOCUMENT else None
        structure = document_structure(
            ctx.digest, document_pages(ctx.tree, doubtful=False), ctx.tree, paged
        )
        chunks = block_chunks(structure["blocks"])
        data = dumps_lines(
            {
                "id": f"{ctx.digest}:{c.page}:{c.part}",
                "document": ctx.digest,
                "page": c.page,
                "part": c.part,
                "headings": list(c.headings),
                "text": c.text,
                "blocks": list(c.blocks),
                "regions": list(c.regions),
            }
            for c in chunks
        )
        content = {
            "chunks": len(chunks),
            "pages": len({c.page for c in chunks}),
            "blocks": len(structure["blocks"]),
        }
        files = {CHUNKS: data, DOCUMENT_STRUCTURE: _structure_json(structure)}
        return {"chunks": Produced(files, content)}


def _structure_json(structure: dict[str, Any]) -> bytes:
    return (json.dumps(structure, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
