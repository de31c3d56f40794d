"""Unstructured's chunking (``chunking_strategy`` ``basic``, ``by_title`` or ``by_page``) over
the elements the partition API answers, with the options Unstructured's API takes and their
meaning there.

Consecutive elements are joined (a blank line between) into chunks of at most
``max_characters``; a chunk that reaches ``new_after_n_chars`` takes no more. A table is a chunk
of its own. ``by_title`` also starts a chunk at each title (and, with ``multipage_sections``
false, at each new page), then joins a section shorter than ``combine_under_n_chars`` with the
next where both fit; ``by_page`` starts a chunk at each new page. Only an element longer than
``max_characters`` is split, at a line break or a space where it can be: each piece after the
first begins with the last ``overlap`` characters of the piece before it (with
``overlap_all``, every chunk begins with the end of the one before).
A table too long is split into ``TableChunk`` pieces, its HTML cut alike.

Two limits keep an answer from being made to outgrow its document: ``overlap`` is at most half of
``max_characters`` (Unstructured takes less than all of it, so that pieces may be nearly all
overlap), and an answer holds at most :data:`MAX_CHUNKS` chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

STRATEGIES = ("basic", "by_title", "by_page")
"""The strategies made here (Unstructured's ``by_similarity`` needs its own embedding model)."""
MAX_CHARACTERS = 500
"""Unstructured's default chunk size."""
SEPARATOR = "\n\n"
"""What stands between two elements' texts in a chunk."""
SPLIT_AT = ("\n", " ")
"""Where an element too long is split, in order of preference (else at the limit)."""
MAX_CHUNKS = 100_000
"""Chunks one answer may hold: 50 MiB of JSON at least, ``max_characters=1`` on 100 KB of
text."""

Make = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]
"""Makes an element from its type, text, seed of its id and metadata."""


class ChunkingError(ValueError):
    """Options that chunk nothing as asked, or an answer past :data:`MAX_CHUNKS`."""


@dataclass(frozen=True)
class ChunkingOptions:
    strategy: str = "basic"
    max_characters: int = MAX_CHARACTERS
    new_after_n_chars: int | None = None
    combine_under_n_chars: int | None = None
    overlap: int = 0
    overlap_all: bool = False
    multipage_sections: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ChunkingError(
                f"chunking_strategy is {', '.join(STRATEGIES)}, not {self.strategy!r}"
            )
        least = {
            "max_characters": (self.max_characters, 1),
            "new_after_n_chars": (self.new_after_n_chars, 0),
            "combine_under_n_chars": (self.combine_under_n_chars, 0),
            "overlap": (self.overlap, 0),
        }
        for name, (value, lowest) in least.items():
            if value is not None and value < lowest:
                raise ChunkingError(f"{name} must be {lowest} or more, not {value}")
        if self.overlap > self.max_characters // 2:
            raise ChunkingError(
                f"overlap must be at most half of max_characters ({self.max_characters // 2}), "
                f"not {self.overlap}"
            )

    @property
    def soft_max(self) -> int:
        """The length at which a chunk takes no more elements."""
        wanted = self.new_after_n_chars
        return self.max_characters if wanted is None else min(wanted, self.max_characters)

    @property
    def combine_under(self) -> int:
        """``by_title``: a section shorter than this is joined with the next (0: never)."""
        if self.strategy != "by_title":
            return 0
        wanted = self.combine_under_n_chars
        return min(self.max_characters if wanted is None else wanted, self.soft_max)

    @property
    def between_chunks(self) -> int:
        """Characters of a chunk repeated at the start of the next one of whole elements."""
        return self.overlap if self.overlap_all else 0


class _PreChunk:
    """Whole elements that make one chunk (more, if its one element is too long), and what
    it begins with of the chunk before (``overlap_all``). Its length is kept as elements are
    added and its text joined only when asked: a section of many small elements costs its
    length, not its length squared."""

    def __init__(self, prefix: str = "") -> None:
        self.elements: list[dict[str, Any]] = []
        self.prefix = prefix
        self.length = len(prefix)
        """The length of :attr:`text`."""

    def add(self, element: dict[str, Any]) -> None:
        joint = "\n" if element["type"] == "Table" else SEPARATOR
        self.length += len(element["text"]) + (len(joint) if self.length else 0)
        self.elements.append(element)

    def extend(self, other: _PreChunk) -> None:
        """``other``'s elements added (its prefix is this one's end, already here)."""
        for element in other.elements:
            self.add(element)

    @property
    def is_table(self) -> bool:
        return bool(self.elements) and self.elements[0]["type"] == "Table"

    @property
    def text(self) -> str:
        """Joined when asked (for its tail, and for its chunks)."""
        texts = [e["text"] for e in self.elements]
        if self.is_table:
            return f"{self.prefix}\n{texts[0]}" if self.prefix else texts[0]
        return SEPARATOR.join([self.prefix, *texts] if self.prefix else texts)

    def takes(self, element: dict[str, Any], options: ChunkingOptions) -> bool:
        if not self.elements:
            return True
        if self.is_table or element["type"] == "Table" or self.length >= options.soft_max:
            return False
        return self.length + len(SEPARATOR) + len(element["text"]) <= options.max_characters

    def tail(self, options: ChunkingOptions) -> str:
        """What the next chunk begins with (``overlap_all``)."""
        overlap = options.between_chunks
        return self.text[-overlap:].strip() if overlap else ""


def chunked(
    elements: list[dict[str, Any]], options: ChunkingOptions, make: Make
) -> list[dict[str, Any]]:
    """``elements`` as Unstructured's chunks: ``CompositeElement``, ``Table`` and
    ``TableChunk`` elements made by ``make``."""
    pre_chunks = _pre_chunks(elements, options)
    if options.combine_under:
        pre_chunks = _combined(pre_chunks, options)
    chunks: list[dict[str, Any]] = []
    for pre_chunk in pre_chunks:
        for chunk in _chunks_of(pre_chunk, options, make, len(chunks)):
            chunks.append(chunk)
            if len(chunks) > MAX_CHUNKS:
                raise ChunkingError(
                    f"the answer would hold over {MAX_CHUNKS:,} chunks: ask for a larger "
                    "max_characters"
                )
    return chunks


def _pre_chunks(elements: list[dict[str, Any]], options: ChunkingOptions) -> list[_PreChunk]:
    found: list[_PreChunk] = []
    building = _PreChunk()
    page = None
    for element in elements:
        if not element["text"] or element["type"] in ("PageBreak", "CheckBox"):
            continue
        new_page = element["metadata"].get("page_number") != page and page is not None
        page = element["metadata"].get("page_number")
        starts_section = (options.strategy == "by_page" and new_page) or (
            options.strategy == "by_title"
            and (element["type"] == "Title" or (new_page and not options.multipage_sections))
        )
        if building.elements and (starts_section or not building.takes(element, options)):
            found.append(building)
            building = _PreChunk(building.tail(options))
        building.add(element)
    if building.elements:
        found.append(building)
    return found


def _combined(pre_chunks: list[_PreChunk], options: ChunkingOptions) -> list[_PreChunk]:
    """Sections shorter than ``combine_under`` joined with the next where both fit (the
    second's prefix is the first's end, already there)."""
    found: list[_PreChunk] = []
    for pre_chunk in pre_chunks:
        last = found[-1] if found else None
        if last is not None and not (last.is_table or pre_chunk.is_table):
            own = pre_chunk.length - (len(pre_chunk.prefix) + len(SEPARATOR)) * bool(
                pre_chunk.prefix
            )
            both = last.length + len(SEPARATOR) + own
            if last.length < options.combine_under and both <= options.max_characters:
                last.extend(pre_chunk)
                continue
        found.append(pre_chunk)
    return found


def _chunks_of(
    pre_chunk: _PreChunk, options: ChunkingOptions, make: Make, number: int
) -> Iterator[dict[str, Any]]:
    first = pre_chunk.elements[0]
    if not pre_chunk.is_table:
        for n, piece in enumerate(_pieces(pre_chunk.text, options)):
            yield make("CompositeElement", piece, f"chunk-{number + n}", dict(first["metadata"]))
        return
    markup = str(first["metadata"].get("text_as_html") or "")
    limit = options.max_characters
    if len(pre_chunk.text) <= limit and len(markup) <= limit:
        yield make("Table", pre_chunk.text, f"chunk-{number}", dict(first["metadata"]))
        return
    markups = (markup[i : i + limit] for i in range(0, len(markup), limit))
    pieces = zip_longest(_pieces(pre_chunk.text, options), markups, fillvalue="")
    for n, (piece, piece_markup) in enumerate(pieces):
        metadata = dict(first["metadata"]) | {"text_as_html": piece_markup}
        if n:
            metadata["is_continuation"] = True
        yield make("TableChunk", piece, f"chunk-{number + n}", metadata)


def _pieces(text: str, options: ChunkingOptions) -> Iterator[str]:
    """``text`` in pieces of at most ``max_characters``, each after the first beginning with
    the end of the one before (``overlap``). Each step reads at most ``max_characters`` and a
    separator's length of the text, so a long text costs its length, not its length squared."""
    limit, overlap = options.max_characters, options.overlap
    carried, at = "", 0  # the rest is carried + text[at:]
    while True:
        window = carried + text[at : at + max(0, limit + 1 - len(carried))]
        if len(carried) + len(text) - at <= limit:
            if rest := (carried + text[at:]).strip():
                yield rest
            return
        piece, rest = _split(window, limit, overlap)
        if piece:
            yield piece
        at += len(window) - len(carried)
        carried = rest if rest.strip() else ""
        if not carried or carried[-1].isspace():
            while at < len(text) and text[at].isspace():
                at += 1


def _split(window: str, limit: int, overlap: int) -> tuple[str, str]:
    """The first piece of ``window`` (longer than ``limit``) and what is left of the window,
    beginning with the piece's last ``overlap`` characters: cut at the last line break, else
    the last space, within the limit (a piece of more than ``overlap`` characters), else at
    the limit."""
    for separator in SPLIT_AT:
        cut = window.rfind(separator, overlap + 1, limit + len(separator))
        if cut < 0:
            continue
        piece = window[:cut].rstrip()
        rest = window[cut + len(separator) :].lstrip()
        if overlap > 1 and piece:
            rest = f"{piece[-(overlap - 1) :].lstrip()} {rest}"
        if piece and len(rest) < len(window):
            return piece, rest
    return window[:limit].rstrip(), window[limit - overlap :].lstrip()
