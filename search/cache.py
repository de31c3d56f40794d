"""A local copy of the bucket's index, so that a query reads local disk instead of making
dozens of ranged requests to object storage (``search`` and ``serve``, ``--index-cache``).

Lance never changes a file it has written: a new version adds data, deletion and index files
and a manifest naming them. So the copy takes only files it lacks, and is brought up to date
in three steps that keep it readable at every moment:

1. list the table's ``_versions/`` and pick the newest manifest;
2. list everything else (every file that manifest names was written before it, so it is in
   this second listing) and download what the copy lacks or holds at another size;
3. write that manifest last (a reader opening the copy never sees a manifest whose files are
   missing), and remove local manifests the bucket no longer has.

Files the bucket dropped (its compaction clean-up) are removed after :data:`GRACE_SECONDS`,
so a reader holding an older version keeps its files meanwhile. The first check of a process
compares every file's size with the bucket's (a copy cut short by a crash is mended); later
ones, at most every ``check_every`` seconds, list the versions alone while nothing changed.
An index larger than ``max_bytes`` is not copied (queries go to the bucket), and a copy that
cannot be opened is wiped and taken again: the bucket is the truth, never the copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bucketdigest.search.location import IndexLocation
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 8 << 30
CHECK_SECONDS = 5.0
GRACE_SECONDS = 600.0
_SKIPPED = ("_transactions/", "_versions/")
_VERSIONS = "_versions/"
_U64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class IndexCacheSettings:
    """Whether and where ``search`` and ``serve`` keep their copy of a bucket's index."""

    enabled: bool = True
    folder: Path | None = None
    """None: :func:`default_cache_folder`."""
    max_bytes: int = DEFAULT_MAX_BYTES


def open_cache(settings: StoreSettings, options: IndexCacheSettings) -> IndexCache | None:
    """The copy of the index of the bucket ``settings`` names; None when it is off, or when
    the bucket is a local folder (its index is on local disk already)."""
    if not options.enabled or not settings.bucket.startswith("s3://"):
        return None
    folder = options.folder or default_cache_folder(settings.bucket)
    return IndexCache(open_store(settings, self_test=False), folder, max_bytes=options.max_bytes)


def default_cache_folder(bucket: str) -> Path:
    """``$XDG_CACHE_HOME/bucketdigest/index/<hash of the bucket URL>`` (``~/.cache`` when
    unset): one copy per bucket, shared by every command of the user."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "bucketdigest" / "index" / hashlib.sha256(bucket.encode()).hexdigest()[:16]


def manifest_version(name: str) -> int | None:
    """The version a manifest file name stands for: Lance's V2 names count down from 2**64-1
    (so the newest sorts first), V1 names count up; None for anything else."""
    stem, dot, ext = name.rpartition(".")
    if not dot or ext != "manifest" or not stem.isdigit():
        return None
    number = int(stem)
    return _U64_MAX - number if len(stem) == 20 else number


@dataclass
class SyncReport:
    """What one bringing-up-to-date did."""

    downloaded: int = 0
    bytes: int = 0
    removed: int = 0
    versions: dict[str, int] = field(default_factory=dict)


class TooLarge(Exception):
    """The index is larger than the cache may hold."""


class IndexCache:
    """The local copy of one bucket's index under ``folder``."""

    def __init__(
        self,
        store: Store,
        folder: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        check_every: float = CHECK_SECONDS,
    ) -> None:
        self.store = store
        self.folder = folder
        self.max_bytes = max_bytes
        self.check_every = check_every
        self._checked = -float("inf")
        self._lock = threading.Lock()
        self._usable = True
        self._verified: set[str] = set()
        """Tables whose every file was checked against the bucket's listing by this process
        (then only a new version is looked for)."""

    @property
    def location(self) -> IndexLocation:
        return IndexLocation(str(self.folder), {})

    def local_location(self, tables: tuple[str, ...]) -> IndexLocation | None:
        """The copy, brought up to date when it was last checked ``check_every`` seconds ago
        or more; None when the bucket has to be read directly (too large, or the copy cannot
        be made)."""
        with self._lock:
            if time.monotonic() - self._checked >= self.check_every:
                try:
                    self.sync(tables)
                    self._usable = True
                except TooLarge as exc:
                    if self._usable:
                        log.warning("%s; searching the bucket directly", exc)
                    self._usable = False
                except OSError as exc:
                    log.warning("the index cache at %s cannot be used (%s)", self.folder, exc)
                    self._usable = False
                self._checked = time.monotonic()
            return self.location if self._usable else None

    def forget(self, table: str) -> None:
        """Drop a table's copy (it could not be opened): the next check takes it anew."""
        with self._locked():
            _remove_tree(self.folder / f"{table}.lance")
        self._verified.discard(table)
        self._checked = -float("inf")

    def sync(self, tables: tuple[str, ...]) -> SyncReport:
        """Bring every table of ``tables`` up to date with the bucket (see the module)."""
        report = SyncReport()
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._locked():
            for table in tables:
                self._sync_table(table, report)
            for local in self.folder.glob("*.lance"):
                # another generation's copy (search/generation.py), once the bucket dropped it
                table = local.name.removesuffix(".lance")
                if table not in tables and not any(
                    True for _ in self.store.list(keys.index_table_prefix(table), limit=1)
                ):
                    _remove_tree(local)
        return report

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One process at a time brings the copy up to date (serve may run several)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _sync_table(self, table: str, report: SyncReport) -> None:
        prefix = keys.index_table_prefix(table)
        local = self.folder / f"{table}.lance"
        manifests = {
            info.key: version
            for info in self.store.list(prefix + _VERSIONS)
            if (version := manifest_version(info.key.rsplit("/", 1)[-1])) is not None
        }
        if not manifests:
            _remove_tree(local)
            return
        newest = max(manifests, key=manifests.__getitem__)
        report.versions[table] = manifests[newest]
        target = local / newest[len(prefix) :]
        if target.is_file() and table in self._verified:
            return
        listed = {
            info.key[len(prefix) :]: info
            for info in self.store.list(prefix)
            if not info.key[len(prefix) :].startswith(_SKIPPED)
        }
        total = sum(info.size for info in listed.values())
        if total > self.max_bytes:
            raise TooLarge(
                f"the index's {table} table takes {total >> 20} MiB, more than the "
                f"{self.max_bytes >> 20} MiB the cache may hold"
            )
        for name, info in listed.items():
            path = local / name
            fresh = path.is_file() and path.stat().st_size == info.size
            if not fresh and self._download(info.key, path):
                report.downloaded += 1
                report.bytes += info.size
        if not target.is_file():
            self._download(newest, target)
        report.removed += self._prune(local, set(listed), newest[len(prefix) :])
        self._verified.add(table)

    def _download(self, key: str, path: Path) -> bool:
        """Into a temporary name, then renamed: a reader never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        try:
            self.store.download(key, partial)
        except NotFound:  # removed by the bucket's clean-up since the listing
            return False
        os.replace(partial, path)
        return True

    def _prune(self, local: Path, listed: set[str], manifest: str) -> int:
        """Remove other manifests now, and files the bucket no longer has once they are older
        than the grace period (a reader may still be on the version that used them)."""
        removed = 0
        now = time.time()
        for path in local.rglob("*"):
            if not path.is_file():
                continue
            name = path.relative_to(local).as_posix()
            if name.startswith(_VERSIONS):
                stale = name != manifest
            else:
                stale = name not in listed and now - path.stat().st_mtime > GRACE_SECONDS
            if stale:
                path.unlink(missing_ok=True)
                removed += 1
        return removed


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
