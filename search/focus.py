"""Which blocks of a found passage answer the query, so a hit points at them, not its page.

A chunk covers up to a page or more of blocks (``document.json``); the paragraph that answers
a question is one of them. The blocks that hold the query's words (stemmed as the snippet
stems them; CJK as character pairs) are picked greedily: first the one holding the most of
them, then others only while each adds words the picked ones lack, at most
:data:`MAX_BLOCKS`. When no block holds any (a question in other words than the passage),
none is picked and the hit keeps the whole chunk's regions: embedding each block of each hit
to find the closest in meaning costs a search about 40 ms a block on this machine's CPU. A
hit's ``regions`` are the picked blocks' regions; the chunk's own stay beside them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bucketdigest.search.hit import Hit
from bucketdigest.search.snippet import words_held_each
from bucketdigest.shared.jsonlines import loads_lines

MAX_BLOCKS = 3
SHOWN_KINDS = frozenset(
    {"heading", "paragraph", "list_item", "table", "caption", "footnote", "formula", "code"}
)
"""Blocks a passage's focus may be (not pictures, nor running heads and feet)."""

Block = Mapping[str, Any]


def passage_blocks(blocks: Sequence[Block], query: str) -> list[Block]:
    """The blocks of ``blocks`` (one chunk's, in reading order) that hold words of ``query``
    (see the module's docstring), in reading order."""
    shown = [b for b in blocks if b.get("kind") in SHOWN_KINDS and str(b.get("text", "")).strip()]
    held = words_held_each(query, [str(b["text"]) for b in shown])
    picked: list[int] = []
    covered: set[str] = set()
    while shown and len(picked) < MAX_BLOCKS:
        gains = [
            (len(words - covered), b.get("kind") != "heading", -n)
            for n, (b, words) in enumerate(zip(shown, held, strict=True))
        ]
        best = max(range(len(shown)), key=lambda n: gains[n])
        if gains[best][0] == 0:
            break
        picked.append(best)
        covered |= held[best]
    return [shown[n] for n in sorted(picked)]


def regions_of(blocks: Sequence[Block]) -> tuple[dict[str, float], ...]:
    """The regions of ``blocks`` on their pages, in order."""
    return tuple(dict(region) for block in blocks for region in block.get("regions") or ())


def focused_hit(
    hit: Hit,
    chunk: Mapping[str, Any] | None,
    blocks: Mapping[str, Block],
    query: str,
) -> Hit:
    """``hit`` with its regions: those of the blocks of ``chunk`` (its record in
    ``chunks.jsonl``) that answer ``query``, of the whole chunk when none does, the chunk's as
    ``chunk_regions``; ``blocks``: ``document.json``'s blocks by id."""
    if not chunk:
        return hit
    every = tuple(dict(r) for r in chunk.get("regions") or ())
    mine = [blocks[i] for i in chunk.get("blocks") or () if i in blocks]
    picked = [b for b in passage_blocks(mine, query) if b.get("regions")]
    return replace(
        hit,
        regions=regions_of(picked) or every,
        chunk_regions=every,
        focus=tuple(str(b["id"]) for b in picked),
    )


def blocks_by_id(structure: Mapping[str, Any]) -> dict[str, Block]:
    """``document.json``'s blocks by id."""
    return {str(b["id"]): b for b in structure.get("blocks") or () if isinstance(b, Mapping)}


@dataclass(frozen=True)
class Locations:
    """What a document's hits need to be pointed at: each chunk's blocks and regions, and
    each block's kind, text and regions (from ``chunks.jsonl`` and ``document.json``)."""

    chunks: dict[str, dict[str, Any]]
    blocks: dict[str, Block]

    @classmethod
    def read(cls, chunks_jsonl: bytes, structure_json: bytes) -> Locations:
        """From the two members' bytes (either may be empty: an older or damaged result)."""
        chunks = {
            str(c["id"]): {
                "blocks": [str(b) for b in c.get("blocks") or ()],
                "regions": list(c.get("regions") or ()),
            }
            for c in loads_lines(chunks_jsonl.decode("utf-8", "replace"))
            if isinstance(c, dict) and "id" in c
        }
        try:
            structure = json.loads(structure_json) if structure_json else {}
        except ValueError:
            structure = {}
        kept = ("id", "kind", "text", "regions")
        blocks = {
            i: {k: b[k] for k in kept if k in b}
            for i, b in (blocks_by_id(structure) if isinstance(structure, dict) else {}).items()
        }
        return cls(chunks, blocks)
