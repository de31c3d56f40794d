"""Passages: search hits with their whole text, the blocks they hold and their regions on the
page, read from each document's result (``chunks.jsonl``): what a RAG pipeline feeds a model and
cites (the LangChain and LlamaIndex loaders use these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketdigest.search.hit import Hit
from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.result import CHUNKS, ResultZip
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
            "regions": [dict(r) for r in self.regions],
            "file_type": self.hit.file_type,
            "score": self.hit.score,
        }


def read_chunks(store: Store, digest: str) -> list[dict[str, Any]]:
    """A done document's chunks (``chunks.jsonl``), in order; none for one not done."""
    try:
        with ResultZip(store.get(keys.out_key(digest)).data) as result:
            return loads_lines(result.text(CHUNKS))
    except BucketdigestError:
        return []


def passages(store: Store, hits: list[Hit]) -> list[Passage]:
    """``hits`` (chunk hits) whole: each document's result is read once."""
    chunks: dict[str, dict[str, dict[str, Any]]] = {}
    found = []
    for hit in hits:
        if hit.digest not in chunks:
            chunks[hit.digest] = {c["id"]: c for c in read_chunks(store, hit.digest)}
        chunk = chunks[hit.digest].get(hit.chunk_id or "", {})
        found.append(
            Passage(
                hit,
                chunk.get("text", hit.snippet.text),
                tuple(chunk.get("blocks") or ()),
                tuple(chunk.get("regions") or ()),
            )
        )
    return found
