"""Sources of documents and their candidate files.

A candidate may already know its SHA-256 (a Git LFS pointer's oid) and can be materialized as a
local file only when its bytes are actually needed, so a document already done costs no
download at all.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bucketdigest.ingestor.scan import FileFilter, scan_folder
from bucketdigest.shared.records import FileError


@dataclass(frozen=True)
class Candidate:
    """One file a source offers."""

    source: str
    relative: str
    materialize: Callable[[], AbstractContextManager[Path]]
    """Yields a local file with the content (fetched if need be), removed afterwards."""
    digest: str | None = None
    """The SHA-256, when known without reading the content (LFS pointers)."""
    size: int | None = None
    downloads: bool = False
    """Whether materializing transfers the content over the network."""
    content_ext: str = ""
    """The extension to store it under, when its path does not tell (a web page's URL)."""

    @property
    def ext(self) -> str:
        return self.content_ext or self.relative.rsplit(".", 1)[-1].lower()


@dataclass(frozen=True)
class NotYet:
    """A file a source holds but leaves for a later ingest (it is still being written): not
    taken, not an error, and not removed from the source's manifest."""

    relative: str


class Source(Protocol):
    """Somewhere documents come from: a folder, a Git repository, a web site."""

    name: str
    """As recorded in the registry: an absolute folder path, a repository URL or a site's
    start URL."""
    commit: str
    """The commit ingested, for Git sources; empty otherwise."""
    lists_everything: bool
    """Whether its candidates are all it holds (a folder, a repository, a site), so a path
    missing since its last ingest was removed; not so for documents handed in one by one
    (the inbox, uploads)."""

    def candidates(self) -> Iterator[Candidate | FileError | NotYet]:
        """Every accepted file, or an error naming a file that cannot be taken (or one left
        for later)."""
        ...


class FolderSource:
    """A local folder (recursive) or a single file."""

    commit = ""
    lists_everything = True

    def __init__(self, root: Path, file_filter: FileFilter) -> None:
        self.root = root.resolve()
        self.name = str(self.root)
        self.file_filter = file_filter
        self.passed_over: Counter[str] = Counter()
        """Files left out for their type, by extension (the ingest report's hint)."""

    def candidates(self) -> Iterator[Candidate | FileError]:
        for item in scan_folder(self.root, self.file_filter, self.passed_over):
            if isinstance(item, FileError):
                yield item
                continue
            yield Candidate(
                source=self.name,
                relative=item.relative,
                materialize=lambda path=item.path: contextlib.nullcontext(path),
            )
