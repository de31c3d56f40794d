"""Where indexed documents came from, read from the documents table: one scan of two columns
instead of one registry GET per file (``bucketdigest ls`` at a million documents)."""

from __future__ import annotations

from bucketdigest.search.tables import open_tables
from bucketdigest.shared.config import StoreSettings

Locations = dict[str, list[tuple[str, str]]]
"""digest → its (source, path) pairs."""


def indexed_locations(settings: StoreSettings, source: str | None = None) -> Locations:
    """Every indexed document's (source, path) pairs, only those whose source contains
    ``source`` when given (a document with none of them maps to an empty list, so that it
    is still known as indexed). Raises SearchIndexError (IndexNotFound: no index yet)."""
    _, documents = open_tables(settings)
    table = documents.to_table(columns=["digest", "locations"])
    found: Locations = {}
    for digest, text in zip(
        table.column("digest").to_pylist(), table.column("locations").to_pylist(), strict=True
    ):
        pairs = [line.split("\t", 1) for line in (text or "").splitlines() if "\t" in line]
        found[digest] = [
            (where_from, path) for where_from, path in pairs if not source or source in where_from
        ]
    return found
