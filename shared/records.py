"""The JSON markers and records kept in the bucket, as frozen dataclasses.

Each encodes to indented, key-sorted JSON a person can read with ``aws s3 cp s3://b/KEY -`` and
carries ``schema_version`` so later versions can read older markers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from enum import Enum, StrEnum
from types import UnionType
from typing import Any, Self, Union, get_args, get_origin, get_type_hints

from bucketdigest.shared.clock import format_time, parse_time
from bucketdigest.shared.errors import CorruptRecord
from bucketdigest.shared.keys import Priority

SCHEMA_VERSION = 1


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(hint: Any, value: Any) -> Any:
    """Rebuild a field of type ``hint`` from its JSON form."""
    if value is None:
        return None
    if get_origin(hint) in (Union, UnionType):
        return _decode(next(a for a in get_args(hint) if a is not type(None)), value)
    if hint is datetime:
        return parse_time(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and issubclass(hint, _JsonRecord):
        return hint.from_dict(value)
    if get_origin(hint) is tuple:
        return tuple(_decode(get_args(hint)[0], item) for item in value)
    return value


class _JsonRecord:
    """Mixin: ``to_json``/``from_json`` for dataclasses of plain, datetime, tuple and nested
    record fields; unknown keys (from newer writers) are ignored."""

    def to_json(self) -> bytes:
        data = {"schema_version": SCHEMA_VERSION, **_encode(asdict(self))}  # type: ignore[call-overload]
        return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        hints = get_type_hints(cls)
        values = {
            f.name: _decode(hints[f.name], data[f.name])
            for f in fields(cls)  # type: ignore[arg-type]
            if f.name in data
        }
        return cls(**values)

    @classmethod
    def from_json(cls, raw: bytes) -> Self:
        """Decode; CorruptRecord (naming the record type) if the bytes are not such a record."""
        try:
            return cls.from_dict(json.loads(raw))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"not a valid {cls.__name__} record: {exc}") from exc


@dataclass(frozen=True)
class Attempt(_JsonRecord):
    """One past attempt at a job: who, when, and how it ended."""

    attempt: int
    worker_id: str
    claimed_at: datetime
    ended_at: datetime
    outcome: str
    error: str = ""


@dataclass(frozen=True)
class Ticket(_JsonRecord):
    """What every queue marker says about the job itself; it travels todo → processing → failed."""

    digest: str
    ext: str
    size: int
    names: tuple[str, ...]
    enqueued_at: datetime
    attempt: int = 1
    history: tuple[Attempt, ...] = ()
    not_before: datetime | None = None
    priority: Priority = Priority.NORMAL
    supersedes: str = ""
    """The document its path held before (the previous revision), when there was one."""


@dataclass(frozen=True)
class Claim(_JsonRecord):
    """The processing marker: who holds the job, under which token, until when."""

    ticket: Ticket
    worker_id: str
    token: str
    claimed_at: datetime
    heartbeat_at: datetime
    lease_until: datetime
    hold: bool = False
    """Held for an operation on the whole document (a purge), not claimed to run it: when its
    holder dies, the hold is dropped and the document left as it was, never requeued."""


class OutputStatus(StrEnum):
    """Where one output of one document stands inside its digest chain (``digests.json``),
    while the document as a whole is in one :class:`~bucketdigest.shared.queue.DocState`.
    ``skipped`` means the digester never applies to this file type; anything that goes wrong
    is ``failed`` (retried until out of attempts)."""

    TODO = "todo"
    IN_PROGRESS = "in-progress"
    COMPLETED = "completed"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class OutputRecord(_JsonRecord):
    """The record of one output of one document (an entry of ``digests.json``).

    ``artifacts`` are the zip members holding the output; ``content`` is a small JSON summary
    of it (keywords, the summary's producer, a page count) and ``content_sha256`` fingerprints
    the artifacts, so a producer that runs again can tell whether its content changed.
    """

    output: str
    digester: str
    digester_version: str
    status: OutputStatus
    created_at: datetime
    updated_at: datetime
    attempts: int = 0
    artifacts: tuple[str, ...] = ()
    content: Any = None
    content_sha256: str = ""
    error: str = ""
    retryable: bool = True
    """False for errors no retry can fix (the file is not a PDF): the failure is final at once."""

    def is_terminal(self, max_attempts: int) -> bool:
        """Completed, skipped, or failed with no attempt left."""
        if self.status is OutputStatus.FAILED:
            return not self.retryable or self.attempts >= max_attempts
        return self.status in (OutputStatus.COMPLETED, OutputStatus.SKIPPED)


@dataclass(frozen=True)
class DigestRecords(_JsonRecord):
    """``digests.json``: every output's record for one document, in chain order."""

    digest: str
    file_type: str
    outputs: tuple[OutputRecord, ...]

    def by_output(self) -> dict[str, OutputRecord]:
        return {record.output: record for record in self.outputs}


@dataclass(frozen=True)
class Failure(_JsonRecord):
    """The failed marker: the last error with its traceback, whether a retry may help, and
    the record of every output as the last attempt left them."""

    ticket: Ticket
    worker_id: str
    failed_at: datetime
    error: str
    traceback: str = ""
    retryable: bool = True
    outputs: tuple[OutputRecord, ...] = ()


@dataclass(frozen=True)
class SourceRecord(_JsonRecord):
    """Registry entry: one path of one source holds the document ``digest``."""

    digest: str
    source: str
    path: str
    size: int
    ingested_at: datetime
    commit: str = ""


@dataclass(frozen=True)
class FileError(_JsonRecord):
    """A file an ingest run could not take, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class ManifestPath(_JsonRecord):
    """A path a source holds, and the document it holds there."""

    path: str
    digest: str


@dataclass(frozen=True)
class RemovedPath(_JsonRecord):
    """A path that held ``digest`` and was gone at the ingest run ``run_id``."""

    path: str
    digest: str
    run_id: str
    removed_at: datetime


@dataclass(frozen=True)
class SourceManifest(_JsonRecord):
    """``registry/sources/<id>.json``: what a source held at its latest ingest (``paths``)
    and what has disappeared from it since (``removed``; a path that comes back leaves it)."""

    source: str
    run_id: str
    updated_at: datetime
    paths: tuple[ManifestPath, ...] = ()
    removed: tuple[RemovedPath, ...] = ()
    superseded: tuple[RemovedPath, ...] = ()
    """Earlier documents of paths that now hold other content (older revisions)."""


class UrlState(StrEnum):
    """Where one URL of a crawled site stands: found and not yet fetched, then fetched (its
    content is in ``store/raw/``) or not fetchable (``error`` says why)."""

    PENDING = "pending"
    FETCHED = "fetched"
    ERROR = "error"


@dataclass(frozen=True)
class CrawlUrl(_JsonRecord):
    """One URL of a crawled site and its state; ``updated_at`` orders the records of a URL."""

    url: str
    state: UrlState
    depth: int
    updated_at: datetime
    found_on: str = ""
    """The page that links to it first, ``sitemap`` or ``start``."""
    digest: str = ""
    ext: str = ""
    size: int = 0
    final_url: str = ""
    """Where redirects led, when elsewhere."""
    etag: str = ""
    last_modified: str = ""
    error: str = ""


@dataclass(frozen=True)
class CrawlLogEntry(_JsonRecord):
    """``registry/crawls/<site-id>/log/<run-id>-<n>.json``: URLs whose state a crawl changed,
    written as it goes (a page fetched, with the links found on it)."""

    site: str
    run_id: str
    urls: tuple[CrawlUrl, ...]


@dataclass(frozen=True)
class SiteCrawlState(_JsonRecord):
    """``registry/crawls/<site-id>/state.json``: every URL of the site found so far, and when
    a crawl last went through to the end (records newer than that belong to the crawl under
    way, or to one that died, which the next crawl resumes)."""

    site: str
    updated_at: datetime
    completed_at: datetime | None = None
    urls: tuple[CrawlUrl, ...] = ()


@dataclass(frozen=True)
class CrawlCounts(_JsonRecord):
    """What one crawl of a web site did."""

    site: str
    discovered: int = 0
    fetched: int = 0
    unchanged: int = 0
    """Fetched with the same content as before (or answered 304 Not Modified)."""
    resumed: int = 0
    """Stored by an earlier crawl that did not finish, so not fetched again."""
    errors: int = 0
    bytes: int = 0
    completed: bool = False


@dataclass(frozen=True)
class IngestRun(_JsonRecord):
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


@dataclass(frozen=True)
class PurgeSkip(_JsonRecord):
    """A document a purge left in place, and why."""

    digest: str
    reason: str


@dataclass(frozen=True)
class PurgeRun(_JsonRecord):
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
class IndexerLease(_JsonRecord):
    """``index/writer.json``: who writes to the index now (``holder`` empty: nobody), and
    until when; the object's LastModified after a release tells when the index was last
    brought up to date."""

    holder: str
    token: str
    since: datetime
    until: datetime
    last_report: str = ""


@dataclass(frozen=True)
class SweepCursor(_JsonRecord):
    """``monitor/sweep.json``: the consistency sweep has covered the hash space up to
    ``after`` (empty: the next sweep starts from the beginning)."""

    after: str
    swept_at: datetime
