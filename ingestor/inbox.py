"""Documents handed in one at a time rather than found in a source: objects put under
``inbox/`` (taken in by the monitor duty) and files uploaded through ``serve``.

Each is ingested like a file of a folder (hashed, stored under ``store/raw/`` unless the bucket
has it, queued with its name, its origin recorded), but nothing is ever "removed" from these
sources. An inbox object is deleted only once it is fully ingested, and only at the version
that was read, so a crash at any point leaves it in the inbox or ingested, and a pass after the
crash takes it in once: the same bytes are the same document, already stored and queued.
"""

from __future__ import annotations

import contextlib
import logging
import random
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor, IngestReport
from bucketdigest.ingestor.scan import extension
from bucketdigest.ingestor.sources import Candidate
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import read_settings
from bucketdigest.shared.config import MAX_UPLOAD_BYTES
from bucketdigest.shared.errors import InvalidKey, SourceError
from bucketdigest.shared.filetypes import UnsupportedFileType, file_type
from bucketdigest.shared.inbox import InboxReport, inbox_objects, inbox_refusals
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.records import DocumentSettings, FileError, InboxRefusal
from bucketdigest.shared.store import ObjectInfo, Store

log = logging.getLogger(__name__)

INBOX_SOURCE = "inbox"
"""The source name the registry records for documents taken from the inbox."""
UPLOAD_SOURCE = "upload"
"""The source name the registry records for documents uploaded through ``serve``."""

SETTLE_SECONDS = 2.0
"""An inbox object written less than this long ago waits for the next pass: a local bucket's
inbox is a folder, where a copy may still be writing the file (S3 shows an object only once
it is whole)."""
TAKEN_PER_PASS = 100
"""Objects one pass takes in at most (the rest wait for the next)."""


@dataclass(frozen=True)
class HandedIn:
    """Files handed in by name: a source that is no listing of everything it holds."""

    name: str
    files: tuple[Candidate, ...]
    commit: str = ""
    lists_everything: bool = False

    def candidates(self) -> Iterator[Candidate | FileError]:
        yield from self.files


def unreadable_type(name: str) -> str | None:
    """Why no digester takes a document called ``name`` (None: one does)."""
    try:
        file_type(extension(name))
    except UnsupportedFileType as exc:
        return str(exc) if extension(name) else "a name without an extension (.pdf, .md, ...)"
    return None


def refusal_reason(
    name: str, size: int, max_bytes: int, limit: str = "the bucket's inbox_max_bytes"
) -> str | None:
    """Why a document called ``name`` of ``size`` bytes cannot be taken in (None: it can);
    ``limit`` names where ``max_bytes`` is set."""
    if (reason := unreadable_type(name)) is not None:
        return reason
    if size == 0:
        return "an empty file"
    if size > max_bytes:
        return f"{size:,} bytes, over the limit of {max_bytes:,} ({limit})"
    return None


def take_files(
    store: Store,
    files: Sequence[tuple[str, Path]],
    source: str = UPLOAD_SOURCE,
    priority: Priority = Priority.NORMAL,
    settings: DocumentSettings | None = None,
) -> IngestReport:
    """Ingest local ``files`` (name, path), recorded as coming from ``source`` under their
    names: an upload's files, queued with ``settings`` of their own when given. SourceError,
    before any is taken, for a file that is missing, empty or of a type no digester takes, or
    whose name no store may hold."""
    for name, path in files:
        try:
            keys.check_key(name)
            size = path.stat().st_size
        except (InvalidKey, OSError) as exc:
            raise SourceError(f"{path}: {exc}") from exc
        if (reason := unreadable_type(name)) is not None or size == 0:
            raise SourceError(f"{path}: {reason or 'an empty file'}")
    candidates = tuple(
        Candidate(source, name, lambda path=path: contextlib.nullcontext(path))
        for name, path in files
    )
    ingestor = Ingestor(store, priority=priority, settings=settings)
    return ingestor.ingest([HandedIn(source, candidates)])


def take_inbox(
    store: Store, limit: int = TAKEN_PER_PASS, settle: float = SETTLE_SECONDS
) -> InboxReport:
    """Take in what the inbox holds: refuse (and record why) what cannot be taken, ingest the
    rest, then remove each object ingested, at the version read. An object written less
    than ``settle`` seconds ago waits. An empty inbox costs one listing (the refusals of
    objects gone meanwhile are cleared by the next pass that finds something)."""
    objects = list(inbox_objects(store))
    if not objects:
        return InboxReport()
    max_bytes = read_settings(store)[0].inbox_max_bytes or MAX_UPLOAD_BYTES
    now = store.now()
    on_record = {r.name: r for r in inbox_refusals(store)}
    current: set[str] = set()
    """Names whose refusal on record still holds."""
    refused: list[InboxRefusal] = []
    chosen: list[tuple[str, ObjectInfo]] = []
    waiting = 0
    for info in objects:
        try:
            name = keys.inbox_name(info.key)
            reason = refusal_reason(name, info.size, max_bytes)
        except InvalidKey as exc:
            name, reason = info.key.removeprefix(keys.INBOX_PREFIX), f"an unusable name: {exc}"
        if (known := on_record.get(name)) is not None and known.etag == info.etag:
            current.add(name)
        elif reason is not None:
            refusal = InboxRefusal(name, info.etag, info.size, reason, now)
            store.put(keys.inbox_refusal_key(name), refusal.to_json())
            log.warning("%s%s refused: %s", keys.INBOX_PREFIX, name, reason)
            refused.append(refusal)
            current.add(name)
        elif (now - info.last_modified).total_seconds() < settle or len(chosen) >= limit:
            waiting += 1
        else:
            chosen.append((name, info))
    stale = [keys.inbox_refusal_key(name) for name in on_record if name not in current]
    if stale:
        store.delete_many(stale)
    if not chosen:
        return InboxReport(refused=tuple(refused), waiting=waiting)

    # in another order than the other monitors of the fleet, which may be taking the same
    random.shuffle(chosen)
    read_at: dict[str, str] = {}
    candidates = tuple(
        Candidate(
            INBOX_SOURCE, name, lambda info=info, name=name: _fetched(store, info, name, read_at)
        )
        for name, info in chosen
    )
    report = Ingestor(store).ingest([HandedIn(INBOX_SOURCE, candidates)])
    taken = []
    for ingested in report.files:
        store.delete(keys.inbox_key(ingested.path), if_match=read_at[ingested.path])
        taken.append(ingested.path)
    return InboxReport(
        taken=tuple(taken),
        refused=tuple(refused),
        waiting=waiting,
        errors=report.run.errors,
        run_id=report.run.run_id,
    )


@contextlib.contextmanager
def _fetched(store: Store, info: ObjectInfo, name: str, read_at: dict[str, str]) -> Iterator[Path]:
    """The inbox object in a temporary file; ``read_at[name]``: the version read."""
    with tempfile.TemporaryDirectory(prefix="bucketdigest-inbox-") as folder:
        path = Path(folder) / f"document.{keys.normalize_ext(extension(name))}"
        read_at[name] = store.download(info.key, path).etag
        yield path
