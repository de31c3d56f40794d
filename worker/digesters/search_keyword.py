"""search-keyword: ``chunks.jsonl``, page-level chunks ready for a keyword index.

One JSON object per line: ``id`` (``<hash>:<page>:<part>``), ``document``, ``page``, ``part``,
``headings`` (the path of Markdown headings the chunk sits under, outermost first) and
``text`` (plain text, Markdown syntax removed). A page longer than ``MAX_CHARS`` is cut at
paragraph boundaries into parts; an empty page gives no chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.result import CHUNKS
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.pagetext import document_pages, heading, plain_text

MAX_CHARS = 4000


@dataclass(frozen=True)
class Chunk:
    page: int
    part: int
    headings: tuple[str, ...]
    text: str


class _HeadingPath:
    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def see(self, line: str) -> bool:
        """Update the path if ``line`` is a heading; whether it was."""
        found = heading(line)
        if found is None:
            return False
        level, title = found
        self._stack = [(lvl, t) for lvl, t in self._stack if lvl < level] + [(level, title)]
        return True

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._stack)


def _paragraphs(markdown: str) -> Iterator[str]:
    block: list[str] = []
    for line in markdown.splitlines():
        if line.strip():
            block.append(line)
        elif block:
            yield "\n".join(block)
            block = []
    if block:
        yield "\n".join(block)


def page_chunks(pages: list[str], max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Cut Markdown pages into chunks, each with the heading path in force where it starts."""
    path = _HeadingPath()
    chunks: list[Chunk] = []
    for number, page in enumerate(pages, start=1):
        part, texts, size, start_path = 0, [], 0, None
        for paragraph in _paragraphs(page):
            for line in paragraph.splitlines():
                path.see(line)
            text = plain_text(paragraph)
            if not text:
                continue
            if texts and size + len(text) > max_chars:
                part += 1
                chunks.append(Chunk(number, part, start_path or (), "\n\n".join(texts)))
                texts, size, start_path = [], 0, None
            if start_path is None:
                start_path = path.path
            texts.append(text)
            size += len(text) + 2
        if texts:
            chunks.append(Chunk(number, part + 1, start_path or (), "\n\n".join(texts)))
    return chunks


class SearchKeyword(Digester):
    name = "search-keyword"
    label = "Search chunks"
    description = (
        "Page-level chunks with page numbers and heading paths, as chunks.jsonl "
        "(one JSON object a line) for a keyword index."
    )
    version = "1"
    outputs = ("chunks",)
    needs = ("markdown", "ocr", "web-page")
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        chunks = page_chunks(document_pages(ctx.tree))
        lines = [
            json.dumps(
                {
                    "id": f"{ctx.digest}:{c.page}:{c.part}",
                    "document": ctx.digest,
                    "page": c.page,
                    "part": c.part,
                    "headings": list(c.headings),
                    "text": c.text,
                },
                ensure_ascii=False,
            )
            for c in chunks
        ]
        data = "".join(line + "\n" for line in lines).encode()
        content = {"chunks": len(chunks), "pages": len({c.page for c in chunks})}
        return {"chunks": Produced({CHUNKS: data}, content)}
