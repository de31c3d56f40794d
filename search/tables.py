"""Opening the index's two tables (checked against the schema this version writes) from
any machine, and quoting values into their SQL filters."""

from __future__ import annotations

import logging
from typing import Any

from bucketdigest.search import generation
from bucketdigest.search.cache import IndexCache
from bucketdigest.search.generation import CHUNKS, DOCUMENTS, table_names
from bucketdigest.search.index import REBUILD_HINT, check_metadata, lance_environment
from bucketdigest.search.location import IndexLocation, index_location
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import IndexDamaged, IndexMismatch, IndexNotFound

log = logging.getLogger(__name__)


def sql_quoted(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def dataset(location: IndexLocation, name: str) -> Any:
    import lance

    return lance.dataset(f"{location.uri}/{name}.lance", storage_options=location.storage_options)


def open_tables(settings: StoreSettings, cache: IndexCache | None = None) -> tuple[Any, Any]:
    """Both tables of the generation searches read (:mod:`.generation`), checked;
    IndexNotFound when the bucket has no index, IndexDamaged when it has one that cannot be
    read. With ``cache``, from its local copy when it has one that opens (a copy that does
    not is dropped, and the bucket read)."""
    lance_environment()
    store = open_store(settings, self_test=False)
    names = table_names(generation.current(store).current)
    if cache is not None and (local := cache.local_location(names)) is not None:
        try:
            return _checked(tuple(dataset(local, name) for name in names))
        except (ValueError, OSError, IndexMismatch) as exc:
            log.warning("index copy %s unreadable (%s); reading the bucket", local.uri, exc)
            for name in names:
                cache.forget(name)
    location = index_location(settings)
    try:
        tables = tuple(dataset(location, name) for name in names)
    except (ValueError, OSError) as exc:
        if not any(True for _ in store.list(keys.index_table_prefix(names[0]), limit=1)):
            raise IndexNotFound(
                f"no search index at {location.uri} yet: run `bucketdigest index`"
            ) from exc
        raise IndexDamaged(
            f"the index at {location.uri} cannot be read ({exc}): {REBUILD_HINT}"
        ) from exc
    return _checked(tables)


def _checked(tables: tuple[Any, ...]) -> tuple[Any, Any]:
    chunks, documents = tables
    check_metadata(chunks.schema.metadata, CHUNKS)
    check_metadata(documents.schema.metadata, DOCUMENTS)
    return chunks, documents
