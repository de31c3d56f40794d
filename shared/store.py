"""The Store protocol: the few object-store operations the whole protocol is built on.

Two implementations with identical semantics live in ``shared/stores/``: ``S3Store`` (any
S3-compatible service) and ``LocalStore`` (a directory, the embedded default). Keys are
``/``-separated relative paths built by :mod:`bucketdigest.shared.keys`; data is bytes; no
backend type leaks through this interface. ``tests/shared/test_store_contract.py`` runs one
suite against every implementation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing or a HEAD tells about one object."""

    key: str
    size: int
    etag: str
    last_modified: datetime


@dataclass(frozen=True)
class StoredObject:
    """An object's bytes together with the version (ETag) they were read at."""

    data: bytes
    etag: str
    last_modified: datetime


class Store(Protocol):
    """An object store with conditional writes. All methods may raise ``StoreError``."""

    url: str
    """Where the store lives, for messages: ``s3://bucket/prefix`` or ``/abs/dir``."""

    supports_conditional_delete: bool
    """Whether ``delete(if_match=...)`` is enforced by the backend (see ``self_test``)."""

    def now(self) -> datetime:
        """The store's clock (for S3, the ``Date`` of its latest response), so leases are
        judged by one clock for the whole fleet whatever each machine's time."""
        ...

    def get(self, key: str) -> StoredObject:
        """Read a whole object. Raises ``NotFound``."""
        ...

    def download(self, key: str, dest: Path) -> ObjectInfo:
        """Stream an object into ``dest``. Raises ``NotFound``."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """The object's info, or None when it does not exist."""
        ...

    def put(self, key: str, data: bytes) -> str:
        """Create or replace unconditionally; returns the new ETag."""
        ...

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        """Create only if the key does not exist: the new ETag, or None when it existed."""
        ...

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        """Replace only if the current ETag is ``etag``: the new ETag, or None when it is not
        (changed or deleted)."""
        ...

    def delete(self, key: str, if_match: str | None = None) -> bool:
        """Delete; with ``if_match`` only that version. False when the condition failed or a
        conditional delete found nothing; an unconditional delete of a missing key is True."""
        ...

    def delete_many(self, keys: Sequence[str]) -> None:
        """Delete ``keys`` unconditionally, missing ones included, in as few requests as the
        backend allows (S3: one DeleteObjects per 1,000 keys)."""
        ...

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        """Objects under ``prefix`` in lexicographic key order, strictly after ``start_after``,
        at most ``limit`` of them. Pages are fetched lazily."""
        ...

    def modified_times(self, prefix: str) -> Iterator[float]:
        """When each object under ``prefix`` was last written (POSIX seconds), in no
        particular order: what counting and rates over a million keys need, without the cost
        of ordering them and building each one's info."""
        ...
