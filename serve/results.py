"""Result zips for the server, through a cache bounded on disk and in memory.

A page view reads several members of one zip (info, records, pages, images); fetching the zip
from S3 each time would cost a GET of the whole file per view. Zips are named by their
document's hash and change only when the document is reprocessed, so a cached copy is used as
it is and revalidated with one HEAD (its ETag) at most every ``revalidate_seconds``.

A zip is checked once when it enters the cache (it opens, every member matches its checksum):
a damaged one is never served, not even as the download; every read of it raises
:class:`DamagedResult`, which says to reprocess the document.
"""

from __future__ import annotations

import tempfile
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError, DamagedResult, NotFound
from bucketdigest.shared.result import ZIP_DAMAGE, damage
from bucketdigest.shared.store import Store


class NoResult(BucketdigestError):
    """The document has no result zip (unknown, or not done yet)."""


class NoSuchMember(BucketdigestError):
    """The result zip has no member by that name."""


@dataclass(frozen=True)
class CacheSettings:
    directory: Path | None = None
    """Where cached zips live; None: a temporary folder removed when the server stops."""
    max_bytes: int = 1 << 30
    """Disk the cached zips may take; the least recently used are evicted beyond it."""
    revalidate_seconds: float = 30.0
    max_entries: int = 10_000
    """How many documents' ETags are remembered in memory."""


class ResultCache:
    """Result zips by digest, cached on disk (bounded, least recently used evicted)."""

    def __init__(self, store: Store, settings: CacheSettings) -> None:
        import diskcache

        self.store = store
        self.settings = settings
        self._tmp = None
        if settings.directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="bucketdigest-serve-")
            directory = Path(self._tmp.name)
        else:
            directory = settings.directory
        self._zips = diskcache.Cache(
            str(directory), size_limit=settings.max_bytes, eviction_policy="least-recently-used"
        )
        self._checked: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._damaged: OrderedDict[str, str] = OrderedDict()
        """``digest:etag`` → why that zip cannot be used (so it is not fetched again)."""
        self._lock = threading.Lock()

    def close(self) -> None:
        self._zips.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def _remember(self, digest: str, etag: str) -> None:
        with self._lock:
            self._checked[digest] = (etag, time.monotonic())
            self._checked.move_to_end(digest)
            while len(self._checked) > self.settings.max_entries:
                self._checked.popitem(last=False)

    def revalidate(self, digest: str) -> None:
        """Ask the store for the document's current result at the next read, whenever it was
        last checked (a result just made again can be newer than the one cached)."""
        with self._lock:
            self._checked.pop(digest, None)

    def _current_etag(self, digest: str) -> str:
        """The ETag of the zip in the store, by a HEAD unless checked recently."""
        with self._lock:
            known = self._checked.get(digest)
        if known and time.monotonic() - known[1] < self.settings.revalidate_seconds:
            return known[0]
        info = self.store.head(keys.out_key(digest))
        if info is None:
            raise NoResult(f"{digest}: no result yet")
        self._remember(digest, info.etag)
        return info.etag

    def _fetch(self, digest: str, etag: str) -> str:
        """Download the zip into the cache; returns its cache key."""
        key = f"{digest}:{etag}"
        if key in self._zips:
            return key
        if key in self._damaged:
            raise DamagedResult(digest, self._damaged[key])
        with tempfile.TemporaryDirectory(dir=self._zips.directory) as scratch:
            path = Path(scratch) / "result.zip"
            try:
                info = self.store.download(keys.out_key(digest), path)
            except NotFound as exc:
                raise NoResult(f"{digest}: no result yet") from exc
            key = f"{digest}:{info.etag}"
            self._remember(digest, info.etag)
            reason = damage(path)
            if reason is not None:
                with self._lock:
                    self._damaged[key] = reason
                    while len(self._damaged) > self.settings.max_entries:
                        self._damaged.popitem(last=False)
                raise DamagedResult(digest, reason)
            with path.open("rb") as handle:
                self._zips.set(key, handle, read=True)
        return key

    def version(self, digest: str) -> str:
        """Which version of the document's result is current (``digest:etag``; revalidated
        as the cache revalidates): what is read from one version holds until it changes."""
        return f"{digest}:{self._current_etag(digest)}"

    @contextmanager
    def open(self, digest: str) -> Iterator[zipfile.ZipFile]:
        """The document's result zip, opened for reading."""
        key = self._fetch(digest, self._current_etag(digest))
        handle = self._zips.get(key, read=True)
        if handle is None:  # evicted between the two calls
            key = self._fetch(digest, self._current_etag(digest))
            handle = self._zips.get(key, read=True)
        try:
            with handle, zipfile.ZipFile(handle) as archive:
                yield archive
        except ZIP_DAMAGE as exc:  # the cached copy went bad on disk
            self._zips.delete(key)
            raise DamagedResult(digest, str(exc)) from exc

    def members(self, digest: str, names: list[str]) -> dict[str, bytes]:
        """The members of ``names`` the zip has, by name."""
        with self.open(digest) as archive:
            present = set(archive.namelist())
            return {name: archive.read(name) for name in names if name in present}

    def member(self, digest: str, name: str) -> bytes:
        """One member; NoSuchMember when the zip has none of that exact name."""
        found = self.members(digest, [name])
        if name not in found:
            shown = name if len(name) <= 100 else name[:100] + "..."
            raise NoSuchMember(f"{digest}: the result has no file {shown!r}")
        return found[name]

    def names(self, digest: str) -> list[str]:
        with self.open(digest) as archive:
            return archive.namelist()

    def zip_bytes(self, digest: str) -> bytes:
        """The whole zip (for download)."""
        key = self._fetch(digest, self._current_etag(digest))
        data = self._zips.get(key)
        if data is None:  # evicted since
            data = self.store.get(keys.out_key(digest)).data
            reason = damage(data)
            if reason is not None:
                raise DamagedResult(digest, reason)
        return bytes(data)
