"""What the bucket already holds, asked cheaply.

For a few files, one HEAD per question. For many (``listing=True``) the relevant prefixes are
listed once, 1,000 keys a request, so re-ingesting a large source that is already done costs a
handful of requests in all. The queue prefixes are always listed: they hold only work in
flight and dead letters.
"""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.store import Store

LISTING_THRESHOLD = 100
"""From this many candidate files on, list prefixes instead of asking per file."""


class KnownObjects:
    """Answers "is this already in the bucket?" for the ingestor."""

    def __init__(self, store: Store, listing: bool) -> None:
        self.store = store
        self.listing = listing
        self._listed: dict[str, set[str]] = {}

    def _keys(self, prefix: str) -> set[str]:
        if prefix not in self._listed:
            self._listed[prefix] = {info.key for info in self.store.list(prefix)}
        return self._listed[prefix]

    def _exists(self, key: str, prefix: str) -> bool:
        if self.listing:
            return key in self._keys(prefix)
        return self.store.head(key) is not None

    def done(self, digest: str) -> bool:
        return self._exists(keys.out_key(digest), keys.OUT_PREFIX)

    def has_raw(self, digest: str, ext: str) -> bool:
        return self._exists(keys.raw_key(digest, ext), keys.RAW_PREFIX)

    def has_source_record(self, digest: str, path_id: str) -> bool:
        """Only known from a listing; without one the conditional create answers instead."""
        return self.listing and keys.registry_doc_key(digest, path_id) in self._keys(
            keys.REGISTRY_DOCS_PREFIX
        )

    def queue_state(self, digest: str) -> QueueState | None:
        for state in QueueState:
            if keys.queue_key(state, digest) in self._keys(state.prefix):
                return state
        return None

    def note(self, key: str) -> None:
        """Remember a key this run wrote, so a duplicate file in the same run is not re-sent."""
        for prefix, known in self._listed.items():
            if key.startswith(prefix):
                known.add(key)
