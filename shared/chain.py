"""The digest chain as every role names it: its digesters in order, what a new result of each
resets, and the output every other derives from.

The digesters themselves are the worker's (:mod:`bucketdigest.worker.digesters`), which
follows this declaration, checked when it is imported; the server, the monitor and the library
name digesters from here without importing the worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

DIGESTERS: tuple[str, ...] = (
    "doc-to-markdown",
    "doc-to-screenshot",
    "page-ocr",
    "url-crawl",
    "tags",
    "summary",
    "search-keyword",
    "search-semantic",
)
"""The digesters in the order they run."""

RESETS: dict[str, tuple[str, ...]] = {
    "doc-to-markdown": ("page-ocr", "tags", "summary", "search-keyword", "search-semantic"),
    "page-ocr": ("tags", "summary", "search-keyword", "search-semantic"),
    "url-crawl": ("tags", "summary", "search-keyword", "search-semantic"),
    "search-keyword": ("search-semantic",),
}
"""The one table of cascading resets: when a digester completes with content different from
what it had before, the outputs of the digesters listed for it go back to ``todo``."""

PRIMARY_OUTPUT = "markdown"
"""The text every other output derives from: a document is done only once it is completed."""


def known_digester(name: str) -> str:
    """``name`` when a digester has it; KeyError naming the known ones otherwise."""
    if name not in DIGESTERS:
        raise KeyError(f"no digester named {name!r} (known: {', '.join(DIGESTERS)})")
    return name


def cascade(name: str, resets: Mapping[str, Sequence[str]] = RESETS) -> list[str]:
    """``name`` and every digester its results reset, directly or through others."""
    found = [name]
    for current in found:
        found.extend(t for t in resets.get(current, ()) if t not in found)
    return found
