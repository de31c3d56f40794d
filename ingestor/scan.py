"""Finding candidate files in local folders: recursive, filtered, safe against symlink loops."""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
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
        if extension(relative) not in self.exts:
            return False
        if self.include and not any(fnmatch.fnmatchcase(relative, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(relative, p) for p in self.exclude)


def extension(relative: str) -> str:
    """``rules/Core.PDF`` → ``pdf``; "" for a name without one."""
    name = relative.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


@dataclass(frozen=True)
class LocalFile:
    """A candidate file: where it is, and its path as the registry records it."""

    path: Path
    relative: str

    @property
    def ext(self) -> str:
        return self.relative.rsplit(".", 1)[-1].lower()


def scan_folder(
    root: Path, file_filter: FileFilter, passed_over: Counter[str] | None = None
) -> Iterator[LocalFile | FileError]:
    """Files under ``root`` (or ``root`` itself) that pass ``file_filter``, in sorted order,
    and an error for each accepted name that is not a readable regular file (a broken
    symbolic link, a FIFO...). Symlinked folders are followed once each, so loops end.
    ``passed_over`` counts, by extension, the files left out for their type alone."""
    passed_over = Counter() if passed_over is None else passed_over
    if root.is_file():
        if file_filter.accepts(root.name):
            yield LocalFile(root, root.name)
        elif extension(root.name) not in file_filter.exts:
            passed_over[extension(root.name)] += 1
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
                if extension(relative) not in file_filter.exts:
                    passed_over[extension(relative)] += 1
                continue
            if path.is_file():
                yield LocalFile(path, relative)
            elif path.is_symlink() and not path.exists():
                yield FileError(path=relative, reason="broken symbolic link")
            else:
                yield FileError(path=relative, reason="not a regular file")
