"""Ingesting sources: hash every candidate, upload what the bucket lacks, enqueue jobs, record
where each document came from, and write a run record."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bucketdigest.ingestor.known import LISTING_THRESHOLD, KnownObjects
from bucketdigest.ingestor.scan import FileFilter, LocalFile, scan_folder
from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import FileError, IngestRun, SourceRecord, Ticket
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.counting import CountingStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestedFile:
    """One candidate file and what ingest did with it."""

    source: str
    path: str
    digest: str
    state: str
    """``done``, ``queued``, ``in-queue`` (already todo/processing) or ``failed`` (dead letter)."""


@dataclass
class IngestReport:
    """The run record plus, per file, what happened (the CLI's ``--json``)."""

    run: IngestRun
    files: list[IngestedFile] = field(default_factory=list)


def sha256_file(path: Path) -> tuple[str, int]:
    """Streaming SHA-256 and size of a file."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
        return digest, handle.tell()


def path_id(source: str, path: str) -> str:
    """A stable id for (source, path), used in registry keys."""
    return hashlib.sha256(f"{source}\0{path}".encode()).hexdigest()[:32]


def new_run_id(store: Store) -> str:
    return f"{store.now().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


class Ingestor:
    """Takes candidate files into one store; counts every request it makes."""

    def __init__(
        self, store: Store, *, on_file: Callable[[IngestedFile], None] | None = None
    ) -> None:
        self.store = CountingStore(store)
        self.on_file = on_file

    def ingest_file(
        self, known: KnownObjects, source: str, item: LocalFile, run: dict
    ) -> IngestedFile:
        digest, size = sha256_file(item.path)
        ext = keys.normalize_ext(item.ext)
        state = self._enqueue(known, digest, ext, size, item, run)
        record_id = path_id(source, item.relative)
        if not known.has_source_record(digest, record_id):
            record = SourceRecord(
                digest=digest,
                source=source,
                path=item.relative,
                size=size,
                ingested_at=self.store.now(),
            )
            self.store.put_if_absent(keys.registry_doc_key(digest, record_id), record.to_json())
        return IngestedFile(source, item.relative, digest, state)

    def _enqueue(
        self, known: KnownObjects, digest: str, ext: str, size: int, item: LocalFile, run: dict
    ) -> str:
        if known.done(digest):
            run["already_done"] += 1
            return "done"
        raw = keys.raw_key(digest, ext)
        if not known.has_raw(digest, ext):
            if self.store.put_if_absent(raw, item.path) is not None:
                run["uploaded"] += 1
                run["bytes_uploaded"] += size
            known.note(raw)
        queued = known.queue_state(digest)
        if queued is QueueState.FAILED:
            return "failed"
        if queued is not None:
            return "in-queue"
        ticket = Ticket(
            digest=digest, ext=ext, size=size, names=(item.relative,), enqueued_at=self.store.now()
        )
        todo = keys.queue_key(QueueState.TODO, digest)
        if self.store.put_if_absent(todo, ticket.to_json()) is None:
            return "in-queue"
        known.note(todo)
        run["queued"] += 1
        return "queued"

    def ingest(self, sources: Iterable[Path], file_filter: FileFilter) -> IngestReport:
        """Ingest every candidate of ``sources``; per-file errors are recorded, not raised."""
        started = self.store.now()
        source_list = [str(Path(s).resolve()) for s in sources]
        errors: list[FileError] = []
        candidates: list[tuple[str, LocalFile]] = []
        for source in source_list:
            try:
                candidates.extend((source, item) for item in scan_folder(Path(source), file_filter))
            except (OSError, BucketdigestError) as exc:
                errors.append(FileError(path=source, reason=str(exc)))
        known = KnownObjects(self.store, listing=len(candidates) >= LISTING_THRESHOLD)
        counts = dict.fromkeys(("already_done", "uploaded", "queued", "bytes_uploaded"), 0)
        report_files: list[IngestedFile] = []
        for source, item in candidates:
            try:
                result = self.ingest_file(known, source, item, counts)
            except (OSError, BucketdigestError) as exc:
                log.error("%s: %s", item.path, exc)
                errors.append(FileError(path=str(item.path), reason=str(exc)))
                continue
            report_files.append(result)
            if self.on_file is not None:
                self.on_file(result)
        run_id = new_run_id(self.store)
        record = IngestRun(
            run_id=run_id,
            sources=tuple(source_list),
            started_at=started,
            finished_at=self.store.now(),
            discovered=len(candidates),
            errors=tuple(errors),
            store_requests=self.store.total + 1,
            **counts,
        )
        self.store.put(keys.run_key(run_id), record.to_json())
        return IngestReport(run=record, files=report_files)
