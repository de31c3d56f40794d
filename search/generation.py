"""Which tables are the index, so that a rebuild never leaves search without one.

A rebuild (``index --rebuild``: a new embedding model, a schema change, a damaged index)
writes a new pair of tables beside the pair being searched, named with its generation
(``chunks-<generation>``, ``documents-<generation>``), and only once they are complete does it
switch ``index/generation.json`` to them, one small write. Searches read that record first, so
until the switch they read the old tables, after it the new ones. The old tables stay for
:data:`DROP_AFTER` (a searcher that opened them a moment before finishes its queries) and are
dropped by the next indexer run after that, as are the tables of a rebuild that never finished
(only the indexer's lease holder writes, so tables it does not know are a dead rebuild's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import IndexGeneration
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

DROP_AFTER = timedelta(minutes=10)
CHUNKS = "chunks"
DOCUMENTS = "documents"


def table_names(generation: str) -> tuple[str, str]:
    """The (chunks, documents) tables of ``generation`` ("" is the first, unsuffixed)."""
    if not generation:
        return CHUNKS, DOCUMENTS
    return f"{CHUNKS}-{generation}", f"{DOCUMENTS}-{generation}"


def current(store: Store) -> IndexGeneration:
    """The generation searches read (the first when the bucket has no record: an index
    made before rebuilds were made beside, or none yet). A damaged record reads as the
    first generation, logged."""
    try:
        return IndexGeneration.from_json(store.get(keys.INDEX_GENERATION_KEY).data)
    except NotFound:
        return IndexGeneration()
    except CorruptRecord as exc:
        log.error("%s: %s; reading the first generation's tables", keys.INDEX_GENERATION_KEY, exc)
        return IndexGeneration()


def new_name(store: Store) -> str:
    """A name for a rebuild's generation: when it began, which sorts."""
    return new_name_at(store.now())


def new_name_at(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%S")


def switch(store: Store, generation: str) -> None:
    """Make ``generation``'s tables the index (the caller holds the indexer's lease)."""
    was = current(store)
    record = IndexGeneration(current=generation, previous=was.current, switched_at=store.now())
    store.put(keys.INDEX_GENERATION_KEY, record.to_json())


def drop_unused(
    store: Store,
    db: Any,
    held_since: datetime | None = None,
    still_held: Callable[[], bool] = lambda: True,
) -> list[str]:
    """Drop the tables no search reads any more: the previous generation's once
    :data:`DROP_AFTER` has passed since the switch, and any other generation's (a rebuild
    that died). Returns the tables dropped. The caller holds the indexer's lease, taken at
    ``held_since``; ``still_held()`` is asked before each drop.

    Fenced by generation: a rebuild whose generation began at or after ``held_since`` is not
    a dead one (we did not begin it, so a later holder did, while we were paused past our
    lease), and no table is dropped once the lease is lost."""
    state = current(store)
    keep = set(table_names(state.current))
    switched = state.switched_at
    if state.previous is not None and switched is not None and store.now() - switched < DROP_AFTER:
        keep |= set(table_names(state.previous))
    fence = new_name_at(held_since) if held_since is not None else None
    dropped = []
    for name in db.list_tables().tables:
        kind, _, begun = name.partition("-")
        if kind not in (CHUNKS, DOCUMENTS) or name in keep:
            continue
        if fence is not None and begun and begun >= fence:
            continue
        if not still_held():
            log.warning("index: lease lost; not dropping %s", name)
            break
        db.drop_table(name)
        dropped.append(name)
    return dropped
