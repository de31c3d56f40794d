"""What runs leave behind: ingest and purge runs, the indexer's lease, the consistency
sweep's cursor."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from bucketdigest.shared.records.base import JsonRecord
from bucketdigest.shared.records.crawls import CrawlCounts
from bucketdigest.shared.records.registry import FileError, RemovedPath


@dataclass(frozen=True)
class IngestRun(JsonRecord):
    """What one ingest run did, kept at ``registry/runs/<run-id>.json``."""

    run_id: str
    sources: tuple[str, ...]
    started_at: datetime
    finished_at: datetime
    commits: tuple[str, ...] = ()
    """Per source, the Git commit ingested (empty for folders)."""
    duration_seconds: float = 0.0
    discovered: int = 0
    already_done: int = 0
    uploaded: int = 0
    queued: int = 0
    errors: tuple[FileError, ...] = field(default_factory=tuple)
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0
    """Content fetched from remote sources (Git LFS)."""
    store_requests: int = 0
    removed: tuple[RemovedPath, ...] = ()
    """Paths gone from their source since its previous ingest."""
    crawls: tuple[CrawlCounts, ...] = ()
    """Per web site crawled, what the crawl did."""
    other_types: dict[str, int] | None = None
    """Files in the folders ingested that were left out for their type, by extension."""


@dataclass(frozen=True)
class PurgeSkip(JsonRecord):
    """A document a purge left in place, and why."""

    digest: str
    reason: str


@dataclass(frozen=True)
class PurgeRun(JsonRecord):
    """``registry/runs/<run-id>.purge.json``: what one purge (or ``rm``) removed."""

    run_id: str
    started_at: datetime
    finished_at: datetime
    rule: str
    """What was asked: removed paths (with the grace period), superseded revisions, or rm."""
    dry_run: bool = False
    purged: tuple[str, ...] = ()
    kept: tuple[PurgeSkip, ...] = ()
    objects_deleted: int = 0
    store_requests: int = 0


@dataclass(frozen=True)
class IndexerLease(JsonRecord):
    """``index/writer.json``: who writes to the index now (``holder`` empty: nobody), and
    until when; the object's LastModified after a release tells when the index was last
    brought up to date."""

    holder: str
    token: str
    since: datetime
    until: datetime
    last_report: str = ""
    skipped: dict[str, str] | None = None
    """Documents the last run could not index (a damaged result, say), with why."""


@dataclass(frozen=True)
class WorkerNote(JsonRecord):
    """``workers/<worker-id>.json``: a worker waiting for its run window (``status`` shows it)."""

    worker_id: str
    waiting_since: datetime
    opens_at: datetime
    windows: tuple[str, ...]


@dataclass(frozen=True)
class SweepCursor(JsonRecord):
    """``monitor/sweep.json``: the consistency sweep has covered the hash space up to
    ``after`` (empty: the next sweep starts from the beginning)."""

    after: str
    swept_at: datetime


@dataclass(frozen=True)
class IndexGeneration(JsonRecord):
    """``index/generation.json``: which tables are the index. ``current`` names them (empty:
    ``chunks`` and ``documents``, as before rebuilds were made beside); a rebuild writes its
    tables beside those being searched and switches here once they are complete, and the
    tables of ``previous`` are dropped a grace period after ``switched_at``."""

    current: str = ""
    previous: str | None = None
    switched_at: datetime | None = None


@dataclass(frozen=True)
class DamageCheck(JsonRecord):
    """``monitor/damage.json``: where the damage check goes on from (``after``, empty: the
    start of the hash space), and every damaged object found and not yet seen whole again,
    by key, with what is wrong and what was done about it."""

    after: str
    checked_at: datetime
    found: dict[str, str]
