"""Rebuilding a job's ticket from the bucket, for when its marker is damaged."""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import attempt_budget
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import SourceRecord, Ticket
from bucketdigest.shared.store import ObjectInfo, Store


def registered_names(store: Store, digest: str) -> tuple[str, ...]:
    """The paths ``digest`` was ingested as (its registry records), or the hash itself."""
    names = []
    for info in store.list(keys.registry_doc_prefix(digest)):
        try:
            names.append(SourceRecord.from_json(store.get(info.key).data).path)
        except (NotFound, CorruptRecord):
            continue
    return tuple(dict.fromkeys(names)) or (digest,)


def source_ticket(store: Store, source: ObjectInfo) -> Ticket:
    """A fresh ticket for the source object ``source`` (``store/raw/<hash>.<ext>``), named as
    its registry records name it."""
    digest, ext = keys.parse_raw_key(source.key)
    return Ticket(
        digest=digest,
        ext=ext,
        size=source.size,
        names=registered_names(store, digest),
        enqueued_at=store.now(),
        max_attempts=attempt_budget(store),
    )


def rebuild_ticket(store: Store, digest: str) -> Ticket | None:
    """A fresh ticket for ``digest`` from its source object and registry records, or None
    when the store has no source for it (then there is nothing to process)."""
    for info in store.list(keys.raw_prefix(digest), limit=1):
        return source_ticket(store, info)
    return None
