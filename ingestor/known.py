"""What the bucket already holds, asked cheaply.

Two ways to ask: one HEAD per question, or listing a whole prefix once (1,000 keys a request)
and answering from memory. Listing wins when many files are asked about, unless the prefix is
much larger than the question; so a prefix is listed only within a page budget (one page per
two candidate files) and falls back to HEADs when it turns out bigger. Re-ingesting a large
source that is already done then costs a handful of requests in all.
"""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import LIST_PAGE

LISTING_THRESHOLD = 8
"""From this many candidate files on, try listing prefixes instead of asking per file."""


class KnownObjects:
    """Answers "is this already in the bucket?" for the ingestor."""

    def __init__(self, store: Store, candidates: int) -> None:
        self.store = store
        self.listing = candidates >= LISTING_THRESHOLD
        self.max_keys = max(1, candidates // 2) * LIST_PAGE
        self._listed: dict[str, set[str] | None] = {}

    def _keys(self, prefix: str) -> set[str] | None:
        """Every key under ``prefix``, or None when listing it would exceed the budget."""
        if not self.listing:
            return None
        if prefix not in self._listed:
            found: set[str] = set()
            for info in self.store.list(prefix):
                found.add(info.key)
                if len(found) > self.max_keys:
                    self._listed[prefix] = None
                    break
            else:
                self._listed[prefix] = found
        return self._listed[prefix]

    def _exists(self, key: str, prefix: str) -> bool:
        listed = self._keys(prefix)
        if listed is None:
            return self.store.head(key) is not None
        return key in listed

    def done(self, digest: str) -> bool:
        return self._exists(keys.out_key(digest), keys.OUT_PREFIX)

    def has_raw(self, digest: str, ext: str) -> bool:
        return self._exists(keys.raw_key(digest, ext), keys.RAW_PREFIX)

    def has_source_record(self, digest: str, path_id: str) -> bool:
        """Only known from a listing; without one the conditional create answers instead."""
        listed = self._keys(keys.REGISTRY_DOCS_PREFIX)
        return listed is not None and keys.registry_doc_key(digest, path_id) in listed

    def queue_state(self, digest: str) -> QueueState | None:
        for state in QueueState:
            lanes = Priority if state is QueueState.TODO else (Priority.NORMAL,)
            for lane in lanes:
                folder = lane.prefix if state is QueueState.TODO else state.prefix
                if self._exists(keys.queue_key(state, digest, lane), folder):
                    return state
        return None

    def note(self, key: str) -> None:
        """Remember a key this run wrote, so a duplicate file in the same run is not re-sent."""
        for prefix, known in self._listed.items():
            if known is not None and key.startswith(prefix):
                known.add(key)
