"""The inbox as every role sees it: objects anyone with the uploader role put under
``inbox/``, the refusals recorded for those that cannot be taken, and what one pass taking
them in did. The taking itself is the ingestor's (``ingestor/inbox.py``); status counts and
lists from here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import FileError, InboxRefusal
from bucketdigest.shared.store import ObjectInfo, Store


@dataclass(frozen=True)
class InboxReport:
    """What one pass over the inbox did."""

    taken: tuple[str, ...] = ()
    """Names taken in (stored, queued or found done, and removed from the inbox)."""
    refused: tuple[InboxRefusal, ...] = ()
    """Objects refused this pass (each left in the inbox with its refusal recorded)."""
    waiting: int = 0
    """Objects left for a later pass (written moments ago, or past this pass's share)."""
    errors: tuple[FileError, ...] = ()
    """Objects that could not be read or stored this time; they stay, and are tried again."""
    run_id: str | None = None
    """The ingest run that recorded what was taken."""


def inbox_objects(store: Store) -> Iterator[ObjectInfo]:
    """Every object in the inbox but folder placeholders (a console's "create folder")."""
    for info in store.list(keys.INBOX_PREFIX):
        if not info.key.endswith("/"):
            yield info


def inbox_refusals(store: Store) -> list[InboxRefusal]:
    """The refusals on record, oldest first (one that no longer parses is left out)."""
    found = []
    for info in store.list(keys.INBOX_REFUSALS_PREFIX):
        try:
            found.append(InboxRefusal.from_json(store.get(info.key).data))
        except (NotFound, CorruptRecord):
            continue
    return sorted(found, key=lambda r: r.refused_at)
