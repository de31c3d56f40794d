"""Opening the index's two tables (checked against the schema this version writes) from
any machine, and quoting values into their SQL filters."""

from __future__ import annotations

from typing import Any

from bucketdigest.search.index import (
    CHUNKS,
    DOCUMENTS,
    REBUILD_HINT,
    check_metadata,
    lance_environment,
)
from bucketdigest.search.location import IndexLocation, index_location
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import IndexDamaged, IndexNotFound


def sql_quoted(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def dataset(location: IndexLocation, name: str) -> Any:
    import lance

    return lance.dataset(f"{location.uri}/{name}.lance", storage_options=location.storage_options)


def open_tables(settings: StoreSettings) -> tuple[Any, Any]:
    """Both tables, checked; IndexNotFound when the bucket has no index, IndexDamaged when
    it has one that cannot be read."""
    lance_environment()
    location = index_location(settings)
    try:
        tables = (dataset(location, CHUNKS), dataset(location, DOCUMENTS))
    except (ValueError, OSError) as exc:
        store = open_store(settings, self_test=False)
        if not any(True for _ in store.list(keys.index_table_prefix(CHUNKS), limit=1)):
            raise IndexNotFound(
                f"no search index at {location.uri} yet: run `bucketdigest index`"
            ) from exc
        raise IndexDamaged(
            f"the index at {location.uri} cannot be read ({exc}): {REBUILD_HINT}"
        ) from exc
    for name, table in zip((CHUNKS, DOCUMENTS), tables, strict=True):
        check_metadata(table.schema.metadata, name)
    return tables
