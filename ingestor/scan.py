"""Finding candidate files in local folders: recursive, filtered, safe against symlink loops."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared.errors import SourceError
from bucketdigest.shared.records import FileError


@dataclass(frozen=True)
class FileFilter:
    """Which files a source offers: by extension, then include and exclude globs on the
    path relative to the source (``*`` also matches ``/``)."""

    exts: frozenset[str] = frozenset({"pdf"})
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def accepts(self, relative: str) -> bool:
        ext = relative.rsplit(".", 1)[-1].lower() if "." in relative.rsplit("/", 1)[-1] else ""
        if ext not in self.exts:
            return False
        if self.include and not any(fnmatch.fnmatchcase(relative, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(relative, p) for p in self.exclude)


@dataclass(frozen=True)
class LocalFile:
    """A candidate file: where it is, and its path as the registry records it."""

    path: Path
    relative: str

    @property
    def ext(self) -> str:
        return self.relative.rsplit(".", 1)[-1].lower()


def scan_folder(root: Path, file_filter: FileFilter) -> Iterator[LocalFile | FileError]:
    """Files under ``root`` (or ``root`` itself) that pass ``file_filter``, in sorted order,
    and an error for each accepted name that is not a readable regular file (a broken
    symbolic link, a FIFO...). Symlinked folders are followed once each, so loops end."""
    if root.is_file():
        if file_filter.accepts(root.name):
            yield LocalFile(root, root.name)
        return
    if not root.is_dir():
        raise SourceError("no such file or folder")
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        stat = os.stat(dirpath)
        if (stat.st_dev, stat.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((stat.st_dev, stat.st_ino))
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames):
            path = base / name
            relative = path.relative_to(root).as_posix()
            if not file_filter.accepts(relative):
                continue
            if path.is_file():
                yield LocalFile(path, relative)
            elif path.is_symlink() and not path.exists():
                yield FileError(path=relative, reason="broken symbolic link")
            else:
                yield FileError(path=relative, reason="not a regular file")
