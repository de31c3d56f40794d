"""LocalStore: the bucket protocol on a local directory, the embedded default.

Semantics match S3 with conditional writes:
- create-if-absent is ``link(tmp, key)``, which fails atomically when the key exists;
- replace is ``rename(tmp, key)``, atomic on POSIX;
- the version token (our ETag) is the file's inode, mtime and size: every write makes a new
  inode, so a token never matches a later version;
- conditional replace and delete compare and act under an ``flock`` lock stripe of the key, and
  every other mutation of that key takes the same stripe, so check-then-act cannot interleave.
Several processes on one machine (or on a shared POSIX filesystem with working ``flock``) may
use one directory at once. Keys never leave the root: ``..``, absolute paths, backslashes, NUL
and empty parts are refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from itertools import islice
from operator import itemgetter
from pathlib import Path
from stat import S_ISDIR

from bucketdigest.shared import keys
from bucketdigest.shared.clock import Clock, utc_now
from bucketdigest.shared.errors import InvalidKey, NotFound
from bucketdigest.shared.store import ObjectInfo, StoredObject

INTERNAL_DIR = ".bucketdigest-local"
"""Temporary files and lock stripes; never a key."""

_LOCK_STRIPES = 64


def _process_umask() -> int:
    """This process's umask, read without changing it (``os.umask`` can only be read by
    setting it, which would race with other threads creating files)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current


def _etag(stat: os.stat_result) -> str:
    return f'"{stat.st_ino:x}-{stat.st_mtime_ns:x}-{stat.st_size:x}"'


def _modified(stat: os.stat_result) -> datetime:
    return datetime.fromtimestamp(stat.st_mtime, UTC)


def _info(key: str, stat: os.stat_result) -> ObjectInfo:
    return ObjectInfo(key, stat.st_size, _etag(stat), _modified(stat))


class LocalStore:
    """A directory that behaves like a bucket with conditional writes."""

    supports_conditional_delete = True

    def __init__(self, root: Path, clock: Clock = utc_now) -> None:
        self.root = root.resolve()
        self.clock = clock
        """What :meth:`now` reads: a test moves it forward to let leases expire at once."""
        self.url = str(self.root)
        self._internal = self.root / INTERNAL_DIR
        self._file_mode = 0o666 & ~_process_umask()
        """Objects get the mode an ordinary file write gives (staging files are 0600)."""
        (self._internal / "tmp").mkdir(parents=True, exist_ok=True)
        (self._internal / "locks").mkdir(exist_ok=True)
        self._remove_stale_staging()

    def _remove_stale_staging(self) -> None:
        """Staged files older than an hour were left by a killed process: remove them."""
        cutoff = time.time() - 3600
        for staged in (self._internal / "tmp").iterdir():
            with contextlib.suppress(FileNotFoundError):
                if staged.stat().st_mtime < cutoff:
                    staged.unlink()

    def _path(self, key: str) -> Path:
        parts = keys.check_key(key).split("/")
        if parts[0] == INTERNAL_DIR:
            raise InvalidKey(f"unsafe key for a local store: {key!r}")
        return self.root.joinpath(*parts)

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        stripe = zlib.crc32(key.encode()) % _LOCK_STRIPES
        with open(self._internal / "locks" / f"{stripe:02d}", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _stage(self, data: bytes | Path) -> Path:
        """Write ``data`` to a temporary file inside the root (same filesystem as the keys)."""
        fd, name = tempfile.mkstemp(dir=self._internal / "tmp")
        os.fchmod(fd, self._file_mode)
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, Path):
                with open(data, "rb") as source:
                    shutil.copyfileobj(source, handle, 1 << 20)
            else:
                handle.write(data)
        return Path(name)

    def now(self) -> datetime:
        return self.clock()

    def get(self, key: str) -> StoredObject:
        try:
            with open(self._path(key), "rb") as handle:
                stat = os.fstat(handle.fileno())
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFound(key) from exc
        info = _info(key, stat)
        return StoredObject(data=data, etag=info.etag, last_modified=info.last_modified)

    def download(self, key: str, dest: Path) -> ObjectInfo:
        try:
            with open(self._path(key), "rb") as source, open(dest, "wb") as target:
                stat = os.fstat(source.fileno())
                shutil.copyfileobj(source, target, 1 << 20)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFound(key) from exc
        return _info(key, stat)

    def head(self, key: str) -> ObjectInfo | None:
        try:
            stat = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return None if S_ISDIR(stat.st_mode) else _info(key, stat)

    def put(self, key: str, data: bytes) -> str:
        path = self._path(key)
        staged = self._stage(data)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(key):
            os.replace(staged, path)
            return _etag(path.stat())

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        path = self._path(key)
        staged = self._stage(data)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._locked(key):
                try:
                    os.link(staged, path)
                except FileExistsError:
                    return None
                return _etag(path.stat())
        finally:
            staged.unlink()

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        path = self._path(key)
        staged = self._stage(data)
        with self._locked(key):
            try:
                current = _etag(path.stat())
            except FileNotFoundError:
                current = None
            if current != etag:
                staged.unlink()
                return None
            os.replace(staged, path)
            return _etag(path.stat())

    def delete(self, key: str, if_match: str | None = None) -> bool:
        path = self._path(key)
        with self._locked(key):
            try:
                if if_match is not None and _etag(path.stat()) != if_match:
                    return False
                path.unlink()
            except FileNotFoundError:
                return if_match is None
        return True

    def delete_many(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.delete(key)

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        folder, _, _ = prefix.rpartition("/")
        base = self._path(folder) if folder else self.root
        found: list[tuple[str, os.DirEntry[str]]] = []
        self._scan(str(base), f"{folder}/" if folder else "", prefix, start_after, found)
        found.sort(key=itemgetter(0))  # code point order is UTF-8 byte order, as S3 lists
        yield from islice(self._stat_each(found), limit)

    def modified_times(self, prefix: str) -> Iterator[float]:
        folder, _, _ = prefix.rpartition("/")
        base = self._path(folder) if folder else self.root
        yield from self._stamps(str(base), f"{folder}/" if folder else "", prefix)

    def _stamps(self, directory: str, rel_prefix: str, prefix: str) -> Iterator[float]:
        """The mtime of each file under ``directory`` (whose key starts ``rel_prefix``) that
        is under ``prefix``, as found: one ``stat`` each and nothing else (a million in 4 s)."""
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return
        with entries:
            for entry in entries:
                key = rel_prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if key != INTERNAL_DIR and (
                        (key + "/").startswith(prefix) or prefix.startswith(key + "/")
                    ):
                        yield from self._stamps(entry.path, key + "/", prefix)
                elif key.startswith(prefix):
                    with contextlib.suppress(FileNotFoundError):
                        yield entry.stat(follow_symlinks=False).st_mtime

    @staticmethod
    def _stat_each(found: list[tuple[str, os.DirEntry[str]]]) -> Iterator[ObjectInfo]:
        """The info of each entry still there (a million in a few seconds)."""
        for key, entry in found:
            try:
                stat = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield ObjectInfo(key, stat.st_size, _etag(stat), _modified(stat))

    def _scan(
        self,
        directory: str,
        rel_prefix: str,
        prefix: str,
        start_after: str,
        found: list[tuple[str, os.DirEntry[str]]],
    ) -> None:
        """Collect (key, entry) of the files under ``directory`` whose keys start
        with ``prefix`` and come after ``start_after`` (one ``scandir`` per folder)."""
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            key = rel_prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if key == INTERNAL_DIR:
                    continue
                if (key + "/").startswith(prefix) or prefix.startswith(key + "/"):
                    self._scan(entry.path, key + "/", prefix, start_after, found)
            elif key.startswith(prefix) and key > start_after:
                found.append((key, entry))
