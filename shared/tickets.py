"""Rebuilding a job's ticket from the bucket, for when its marker is damaged."""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.store import Store


def rebuild_ticket(store: Store, digest: str) -> Ticket | None:
    """A fresh ticket for ``digest`` from its source object, or None when the store has no
    source for it (then there is nothing to process)."""
    for info in store.list(keys.raw_prefix(digest), limit=1):
        _, ext = keys.parse_raw_key(info.key)
        return Ticket(
            digest=digest, ext=ext, size=info.size, names=(digest,), enqueued_at=store.now()
        )
    return None
