"""Whether a document with a result still has digesting to do: ``work/<hash>/`` holds a job's
partial progress or a reprocess request. A result zip alone means done; a result zip with
pending work means the job must run again (and its markers must not be cleaned away)."""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.store import Store


def has_pending_work(store: Store, digest: str) -> bool:
    """One listing request."""
    return any(True for _ in store.list(keys.work_prefix(digest), limit=1))


def is_finished(store: Store, digest: str) -> bool:
    """A result exists and nothing waits under ``work/<hash>/``."""
    return store.head(keys.out_key(digest)) is not None and not has_pending_work(store, digest)
