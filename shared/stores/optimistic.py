"""Conditional writes for a store that ignores them (``--claims optimistic``).

Some S3-compatible servers (older Ceph gateways, some appliances) accept ``If-None-Match`` and
``If-Match`` and ignore them. On such a store this wrapper gives every conditional operation
the same answers, by write-then-read-back: it checks the condition (a HEAD), writes
unconditionally, waits ``settle`` seconds, and reads the ETag back; only the writer whose
version is there after the wait holds it. Two writers both win only if one of them took longer
than ``settle`` between its check and its write (a paused process): then a document is
processed twice. Results are content-addressed and deterministic, so a duplicate costs time,
never correctness; a worker that lost its claim learns it at its next heartbeat (the marker's
ETag is not its own) and writes nothing more. docs/protocol.md states the window.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from bucketdigest.shared.store import ObjectInfo, Store, StoredObject

DEFAULT_SETTLE = 1.0


class OptimisticStore:
    """``inner`` with conditional operations emulated (see the module)."""

    supports_conditional_delete = True

    def __init__(self, inner: Store, settle: float = DEFAULT_SETTLE) -> None:
        self.inner = inner
        self.settle = settle
        self.url = inner.url

    def _holds(self, key: str, etag: str) -> bool:
        """After the settle delay, whether the version at ``key`` is still ``etag``."""
        time.sleep(self.settle)
        now = self.inner.head(key)
        return now is not None and now.etag == etag

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        if self.inner.head(key) is not None:
            return None
        etag = self._put(key, data)
        return etag if self._holds(key, etag) else None

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        current = self.inner.head(key)
        if current is None or current.etag != etag:
            return None
        written = self.inner.put(key, data)
        return written if self._holds(key, written) else None

    def delete(self, key: str, if_match: str | None = None) -> bool:
        if if_match is not None:
            current = self.inner.head(key)
            if current is None or current.etag != if_match:
                return False
        return self.inner.delete(key)

    def _put(self, key: str, data: bytes | Path) -> str:
        """An unconditional write, a file streamed as the store streams it (its condition is
        what this store ignores)."""
        if isinstance(data, Path):
            etag = self.inner.put_if_absent(key, data)
            return etag if etag is not None else ""
        return self.inner.put(key, data)

    # everything else goes to the store as it is

    def get(self, key: str) -> StoredObject:
        return self.inner.get(key)

    def download(self, key: str, dest: Path) -> ObjectInfo:
        return self.inner.download(key, dest)

    def head(self, key: str) -> ObjectInfo | None:
        return self.inner.head(key)

    def put(self, key: str, data: bytes) -> str:
        return self.inner.put(key, data)

    def delete_many(self, keys: Sequence[str]) -> None:
        self.inner.delete_many(keys)

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        return self.inner.list(prefix, start_after, limit)

    def modified_times(self, prefix: str) -> Iterator[float]:
        return self.inner.modified_times(prefix)

    def now(self) -> datetime:
        return self.inner.now()
