"""CountingStore: a Store wrapper that counts requests by operation (for run records and
benchmarks). A LIST counts one request per page of 1,000 keys and a batched delete one per
1,000 keys, as S3 bills them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from bucketdigest.shared.store import ObjectInfo, Store, StoredObject

LIST_PAGE = 1000
DELETE_BATCH = 1000


class CountingStore:
    """Delegates to ``inner`` and counts each request in ``requests``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.url = inner.url
        self.requests: Counter[str] = Counter()

    @property
    def supports_conditional_delete(self) -> bool:
        return self.inner.supports_conditional_delete

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def now(self) -> datetime:
        return self.inner.now()

    def get(self, key: str) -> StoredObject:
        self.requests["GET"] += 1
        return self.inner.get(key)

    def download(self, key: str, dest: Path) -> ObjectInfo:
        self.requests["GET"] += 1
        return self.inner.download(key, dest)

    def head(self, key: str) -> ObjectInfo | None:
        self.requests["HEAD"] += 1
        return self.inner.head(key)

    def put(self, key: str, data: bytes) -> str:
        self.requests["PUT"] += 1
        return self.inner.put(key, data)

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        self.requests["PUT"] += 1
        return self.inner.put_if_absent(key, data)

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        self.requests["PUT"] += 1
        return self.inner.put_if_match(key, data, etag)

    def delete(self, key: str, if_match: str | None = None) -> bool:
        self.requests["DELETE"] += 1
        return self.inner.delete(key, if_match)

    def delete_many(self, keys: Sequence[str]) -> None:
        self.requests["DELETE"] += -(-len(keys) // DELETE_BATCH)
        self.inner.delete_many(keys)

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        self.requests["LIST"] += 1
        for count, info in enumerate(self.inner.list(prefix, start_after, limit), start=1):
            if count % LIST_PAGE == 1 and count > 1:
                self.requests["LIST"] += 1
            yield info

    def modified_times(self, prefix: str) -> Iterator[float]:
        self.requests["LIST"] += 1
        for count, stamp in enumerate(self.inner.modified_times(prefix), start=1):
            if count % LIST_PAGE == 1 and count > 1:
                self.requests["LIST"] += 1
            yield stamp
