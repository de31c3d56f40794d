"""The registry's records: which path of which source holds a document, and what each
source held at its last ingest."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bucketdigest.shared.records.base import JsonRecord


@dataclass(frozen=True)
class SourceRecord(JsonRecord):
    """Registry entry: one path of one source holds the document ``digest``."""

    digest: str
    source: str
    path: str
    size: int
    ingested_at: datetime
    commit: str = ""


@dataclass(frozen=True)
class FileError(JsonRecord):
    """A file an ingest run could not take, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class ManifestPath(JsonRecord):
    """A path a source holds, and the document it holds there."""

    path: str
    digest: str


@dataclass(frozen=True)
class RemovedPath(JsonRecord):
    """A path that held ``digest`` and was gone at the ingest run ``run_id``."""

    path: str
    digest: str
    run_id: str
    removed_at: datetime


@dataclass(frozen=True)
class SourceManifest(JsonRecord):
    """``registry/sources/<id>.json``: what a source held at its latest ingest (``paths``)
    and what has disappeared from it since (``removed``; a path that comes back leaves it)."""

    source: str
    run_id: str
    updated_at: datetime
    paths: tuple[ManifestPath, ...] = ()
    removed: tuple[RemovedPath, ...] = ()
    superseded: tuple[RemovedPath, ...] = ()
    """Earlier documents of paths that now hold other content (older revisions)."""


@dataclass(frozen=True)
class InboxRefusal(JsonRecord):
    """``registry/inbox/<id>.json``: the inbox object ``name`` (at version ``etag``) was not
    taken, and why; it stays in the inbox until replaced or removed."""

    name: str
    etag: str
    size: int
    reason: str
    refused_at: datetime
