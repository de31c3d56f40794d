"""Ingesting sources: find candidates, upload what the bucket lacks, enqueue jobs, record
where each document came from, and write a run record.

A candidate whose SHA-256 is known up front (a Git LFS pointer) is only downloaded when the
bucket has neither its result nor its raw bytes; a plain file is hashed locally first.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bucketdigest.ingestor.crawl import CrawlSettings
from bucketdigest.ingestor.known import KnownObjects
from bucketdigest.ingestor.manifest import update_manifest
from bucketdigest.ingestor.opening import open_sources
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.site import SiteSource
from bucketdigest.ingestor.sources import Candidate, FolderSource, NotYet, Source
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import attempt_budget
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.manifests import read_manifest
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import (
    DocumentSettings,
    FileError,
    IngestRun,
    RemovedPath,
    SourceRecord,
    Ticket,
)
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestedFile:
    """One candidate file and what ingest did with it."""

    source: str
    path: str
    digest: str
    state: DocState
    """Where the document stands after ingest."""
    queued: bool = False
    """Whether this run put it in the queue (else it was done, or in the queue already)."""


@dataclass
class IngestReport:
    """The run record plus, per file, what happened (the CLI's ``--json``)."""

    run: IngestRun
    files: list[IngestedFile] = field(default_factory=list)


@dataclass
class _Tally:
    already_done: int = 0
    uploaded: int = 0
    queued: int = 0
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0


def sha256_file(path: Path) -> tuple[str, int]:
    """Streaming SHA-256 and size of a file."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
        return digest, handle.tell()


def path_id(source: str, path: str) -> str:
    """A stable id for (source, path), used in registry keys."""
    return hashlib.sha256(f"{source}\0{path}".encode()).hexdigest()[:32]


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "bucketdigest" / "git"


@dataclass(frozen=True)
class IngestSettings:
    """Which files to take from sources, and how Git sources are fetched."""

    file_filter: FileFilter = field(default_factory=FileFilter)
    ref: str = "HEAD"
    """The Git ref to ingest (``HEAD``: the remote's default branch)."""
    cache_dir: Path = field(default_factory=default_cache_dir)
    """Where Git sources are cloned (bare, without LFS content) and kept for later fetches."""
    priority: Priority = Priority.NORMAL
    """The queue lane of the documents this run queues (or finds queued)."""
    crawl: CrawlSettings | None = None
    """Crawl http(s) URLs as web sites (``--site``) rather than clone them as repositories."""


def ingest_sources(
    store: Store,
    specs: Iterable[str],
    settings: IngestSettings,
    on_file: Callable[[IngestedFile], None] | None = None,
) -> IngestReport:
    """Open the folders, files, repositories and sites named by ``specs`` and ingest them."""
    ingestor = Ingestor(store, on_file=on_file, priority=settings.priority)
    sources, errors = open_sources(
        specs,
        settings.file_filter,
        ref=settings.ref,
        cache_dir=settings.cache_dir,
        crawl=(ingestor.store, settings.crawl) if settings.crawl is not None else None,
    )
    return ingestor.ingest(sources, errors)


class Ingestor:
    """Takes candidate files into one store; counts every request it makes."""

    def __init__(
        self,
        store: Store,
        *,
        on_file: Callable[[IngestedFile], None] | None = None,
        priority: Priority = Priority.NORMAL,
        settings: DocumentSettings | None = None,
    ) -> None:
        self.store = CountingStore(store)
        self.on_file = on_file
        self.priority = priority
        self.settings = settings
        """The chain settings of their own the documents it queues get (a conversion
        request's)."""
        self._previous: dict[str, dict[str, str]] = {}
        """Per source, path → the document it held at the previous ingest."""

    @functools.cached_property
    def _attempt_budget(self) -> int:
        """What the tickets this ingestor queues carry (the bucket's settings, read once)."""
        return attempt_budget(self.store)

    def _upload(
        self, known: KnownObjects, digest: str, ext: str, size: int, path: Path, tally: _Tally
    ) -> bool:
        """Upload the source unless the bucket has it; whether this call created it."""
        raw = keys.raw_key(digest, ext)
        created = self.store.put_if_absent(raw, path) is not None
        if created:
            tally.uploaded += 1
            tally.bytes_uploaded += size
        known.note(raw)
        return created

    def _take(
        self, known: KnownObjects, candidate: Candidate, tally: _Tally
    ) -> tuple[str, int, DocState, bool]:
        """Make sure the bucket has the document; returns (digest, size, state, queued)."""
        ext = keys.normalize_ext(candidate.ext)
        fresh = False
        if candidate.digest is not None and candidate.size is not None:
            digest, size = candidate.digest, candidate.size
            if known.done(digest):
                tally.already_done += 1
                return digest, size, DocState.DONE, False
            if not known.has_raw(digest, ext):
                with candidate.materialize() as path:
                    if candidate.downloads:
                        tally.bytes_downloaded += size
                    fresh = self._upload(known, digest, ext, size, path, tally)
        else:
            with candidate.materialize() as path:
                digest, size = sha256_file(path)
                if known.done(digest):
                    tally.already_done += 1
                    return digest, size, DocState.DONE, False
                if not known.has_raw(digest, ext):
                    fresh = self._upload(known, digest, ext, size, path, tally)
        before = self._previous.get(candidate.source, {}).get(candidate.relative, digest)
        supersedes = "" if before == digest else before
        state, queued = self._enqueue(
            known, digest, ext, size, candidate.relative, tally, fresh, supersedes
        )
        return digest, size, state, queued

    def _enqueue(
        self,
        known: KnownObjects,
        digest: str,
        ext: str,
        size: int,
        name: str,
        tally: _Tally,
        fresh: bool,
        supersedes: str,
    ) -> tuple[DocState, bool]:
        """Queue the document unless it is queued, processing or dead-lettered; returns its
        state and whether this run queued it. A source this run just created cannot have a
        marker yet, so it skips the look-up."""
        state = None if fresh else known.queue_state(digest)
        if state is QueueState.TODO and self.priority is not Priority.NORMAL:
            queue.reprioritize(self.store, digest, self.priority)
        if state is not None:
            return DocState.of(state), False
        ticket = Ticket(
            digest=digest,
            ext=ext,
            size=size,
            names=(name,),
            enqueued_at=self.store.now(),
            priority=self.priority,
            supersedes=supersedes,
            max_attempts=self._attempt_budget,
            settings=self.settings,
            untouched=fresh,
        )
        if not queue.enqueue(self.store, ticket):
            return DocState.TODO, False
        known.note(keys.queue_key(QueueState.TODO, digest, self.priority))
        tally.queued += 1
        return DocState.TODO, True

    def _record_origin(
        self, known: KnownObjects, source: Source, candidate: Candidate, digest: str, size: int
    ) -> None:
        record_id = path_id(source.name, candidate.relative)
        if known.has_source_record(digest, record_id):
            return
        record = SourceRecord(
            digest=digest,
            source=source.name,
            path=candidate.relative,
            size=size,
            ingested_at=self.store.now(),
            commit=source.commit,
        )
        self.store.put_if_absent(keys.registry_doc_key(digest, record_id), record.to_json())

    def ingest(self, sources: Iterable[Source], errors: Iterable[FileError] = ()) -> IngestReport:
        """Ingest every candidate of ``sources``; per-file errors are recorded, not raised.
        ``errors`` are problems found before (sources that could not be opened)."""
        started, clock = self.store.now(), time.perf_counter()
        source_list = list(sources)
        failures = list(errors)
        found: list[tuple[Source, Candidate]] = []
        # per source listed completely, the paths it has that could not be taken
        unreadable: dict[str, set[str]] = {}

        # list what every source offers
        for source in source_list:
            skipped: set[str] = set()
            try:
                for item in source.candidates():
                    if isinstance(item, FileError):
                        failures.append(item)
                        skipped.add(item.path)
                    elif isinstance(item, NotYet):
                        skipped.add(item.relative)
                    else:
                        found.append((source, item))
            except (OSError, BucketdigestError) as exc:
                failures.append(FileError(path=source.name, reason=str(exc)))
            else:
                if source.lists_everything:
                    unreadable[source.name] = skipped

        # upload and queue what the bucket lacks, recording where each file came from
        known = KnownObjects(self.store, len(found))
        self._previous = {
            name: {p.path: p.digest for p in manifest.paths}
            for name in unreadable
            if (manifest := read_manifest(self.store, name)) is not None
        }
        tally = _Tally()
        files: list[IngestedFile] = []
        for source, candidate in found:
            try:
                digest, size, state, queued = self._take(known, candidate, tally)
                self._record_origin(known, source, candidate, digest, size)
            except (OSError, BucketdigestError) as exc:
                log.error("%s: %s: %s", source.name, candidate.relative, exc)
                failures.append(FileError(path=candidate.relative, reason=str(exc)))
                unreadable.get(source.name, set()).add(candidate.relative)
                continue
            files.append(IngestedFile(source.name, candidate.relative, digest, state, queued))
            if self.on_file is not None:
                self.on_file(files[-1])

        # record what each source holds now, and the run
        run_id = keys.new_run_id(self.store.now())
        removed: list[RemovedPath] = []
        for name, skipped in unreadable.items():
            present = {f.path: f.digest for f in files if f.source == name}
            removed += update_manifest(self.store, name, present, skipped, run_id, started)
        record = IngestRun(
            run_id=run_id,
            sources=tuple(s.name for s in source_list),
            commits=tuple(s.commit for s in source_list),
            started_at=started,
            finished_at=self.store.now(),
            duration_seconds=round(time.perf_counter() - clock, 3),
            discovered=len(found)
            + sum(1 for f in failures if f.path not in {s.name for s in source_list}),
            errors=tuple(failures),
            store_requests=self.store.total + 1,
            already_done=tally.already_done,
            uploaded=tally.uploaded,
            queued=tally.queued,
            bytes_uploaded=tally.bytes_uploaded,
            bytes_downloaded=tally.bytes_downloaded,
            removed=tuple(removed),
            crawls=tuple(s.crawl.counts for s in source_list if isinstance(s, SiteSource)),
            other_types=dict(
                sum(
                    (s.passed_over for s in source_list if isinstance(s, FolderSource)),
                    Counter(),
                ).most_common()
            )
            or None,
        )
        self.store.put(keys.run_key(run_id), record.to_json())
        return IngestReport(run=record, files=files)
