"""Passages: search hits with their whole text, the blocks they hold and their regions on the
page, read from each document's result (``chunks.jsonl``): what a RAG pipeline feeds a model and
cites (the LangChain and LlamaIndex loaders use these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketdigest.search.focus import blocks_by_id, focused_hit
from bucketdigest.search.hit import Hit
from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.result import CHUNKS, DOCUMENT_STRUCTURE, ResultZip
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class Passage:
    """A chunk found by a search, whole."""

    hit: Hit
    text: str
    blocks: tuple[str, ...] = ()
    regions: tuple[dict[str, float], ...] = ()

    @property
    def metadata(self) -> dict[str, Any]:
        """What a framework's document carries besides its text."""
        return {
            "hash": self.hit.digest,
            "names": list(self.hit.names),
            "source": self.hit.names[0] if self.hit.names else self.hit.digest,
            "title": self.hit.title,
            "page": self.hit.page,
            "headings": list(self.hit.headings),
            "chunk_id": self.hit.chunk_id,
            "blocks": list(self.blocks),
            "answer_blocks": list(self.hit.focus),
            "regions": [dict(r) for r in self.regions],
            "chunk_regions": [dict(r) for r in self.hit.chunk_regions],
            "file_type": self.hit.file_type,
            "score": self.hit.score,
        }


def read_chunks(store: Store, digest: str) -> list[dict[str, Any]]:
    """A done document's chunks (``chunks.jsonl``), in order; none for one not done."""
    return _read(store, digest)[0]


def _read(store: Store, digest: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A done document's chunks and ``document.json``'s blocks by id (none when not done)."""
    try:
        with ResultZip(store.get(keys.out_key(digest)).data) as result:
            chunks = loads_lines(result.text(CHUNKS))
            structure = result.json(DOCUMENT_STRUCTURE, {})
    except BucketdigestError:
        return [], {}
    return chunks, blocks_by_id(structure) if isinstance(structure, dict) else {}


def passages(store: Store, hits: list[Hit], query: str = "") -> list[Passage]:
    """``hits`` (chunk hits) whole, their regions those of the blocks that answer ``query``
    (:mod:`~bucketdigest.search.focus`): each document's result is read once."""
    read: dict[str, tuple[dict[str, dict[str, Any]], dict[str, Any]]] = {}
    found = []
    for hit in hits:
        if hit.digest not in read:
            chunks, blocks = _read(store, hit.digest)
            read[hit.digest] = ({c["id"]: c for c in chunks}, blocks)
        chunks_by_id, blocks = read[hit.digest]
        chunk = chunks_by_id.get(hit.chunk_id or "", {})
        located = focused_hit(hit, chunk, blocks, query)
        found.append(
            Passage(
                located,
                chunk.get("text", hit.snippet.text),
                tuple(chunk.get("blocks") or ()),
                located.regions,
            )
        )
    return found
