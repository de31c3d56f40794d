"""A job's progress in the bucket (``work/<hash>/``), so a reclaimed job resumes instead of
starting over, at a price in requests that the work saved pays for.

A checkpoint is one object, ``work/<hash>/checkpoint-<n>.zip``: the files of the outputs
completed since the previous checkpoint plus ``digests.json``, every output's record at that
moment, so records never claim files that were not written with or before them. The job
writes one only when the digesters completed since the last one took ``checkpoint_after``
seconds or more (a 1-page document costs no checkpoint; an hour of OCR costs a few), before
handing a job back and before requeueing it after a failure. A reprocess request is
``work/<hash>/digests.json`` alone, whose completed records point into the existing result.
Everything under the prefix goes in one batched delete once the result zip is written.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.archives import extract, member_path
from bucketdigest.shared.errors import CorruptRecord, NotFound, UnsafeArchive
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.result import DIGESTS
from bucketdigest.shared.store import Store
from bucketdigest.worker.output_state import fingerprint, reset
from bucketdigest.worker.package import read_records, write_zip

log = logging.getLogger(__name__)

PARTIAL_DIR = "partial"
"""``<tree>/partial/<digester>/``: finished parts of a digester's work (the Markdown of a
long document, range by range), saved in checkpoints so the next attempt resumes there."""


def _verified(record: OutputRecord, tree: Path) -> bool:
    """Whether ``tree`` holds every file of a completed record, with its fingerprint."""
    try:
        files = {name: member_path(tree, name).read_bytes() for name in record.artifacts}
    except (OSError, UnsafeArchive):
        return False
    return fingerprint(files) == record.content_sha256


def _keep_only(tree: Path, wanted: set[str]) -> None:
    """Remove files of outputs that are not completed (a reset output leaves no stale page),
    but not the partial work of digesters that have not finished."""
    for folder, _, names in os.walk(tree):
        for name in names:
            path = Path(folder) / name
            member = path.relative_to(tree).as_posix()
            if member not in wanted and not member.startswith(f"{PARTIAL_DIR}/"):
                path.unlink()


class Progress:
    """The ``work/<hash>/`` objects of one job: read once at the start, added to by
    checkpoints, cleared at the end."""

    def __init__(
        self, store: Store, digest: str, checkpoint_after: float, saved: bool = True
    ) -> None:
        self.store = store
        self.digest = digest
        self.checkpoint_after = checkpoint_after
        self.saved = saved
        """Whether ``work/<hash>/`` may hold something: False for an untouched ticket's job,
        which then skips the listing."""
        self._known: list[str] = []
        self._next = 1
        self._unsaved: dict[str, bytes] = {}
        self._records: DigestRecords | None = None
        self._since = time.monotonic()
        self._partial_seen: dict[str, tuple[int, int]] = {}

    def load(
        self, tree: Path, previous: Path | None, now: Callable[[], datetime]
    ) -> dict[str, OutputRecord]:
        """The records to resume from (one LIST unless nothing is ``saved``, then a GET per
        object found), with completed outputs' files restored into ``tree``. Latest first:
        the last checkpoint's records,
        the reprocess request, the records of ``previous`` (the existing result). A completed
        output whose files are missing or do not match their fingerprint goes back to
        ``todo`` and is simply made again."""
        if self.saved:
            self._known = [info.key for info in self.store.list(keys.work_prefix(self.digest))]
        checkpoints = sorted(
            (found[1], key)
            for key in self._known
            if (found := keys.parse_work_checkpoint_key(key)) is not None
        )
        self._next = checkpoints[-1][0] + 1 if checkpoints else 1

        # the records to start from: a reprocess request, else the existing result's, with its files
        found = self._request() if keys.work_request_key(self.digest) in self._known else None
        if found is None and previous is not None:
            found = read_records(previous)
        if previous is not None and found is not None:
            wanted = {
                name
                for r in found.outputs
                if r.status is OutputStatus.COMPLETED
                for name in r.artifacts
            }
            try:
                extract(previous, tree, wanted, skip=[DIGESTS])
            except UnsafeArchive as exc:  # its outputs fail verification below and run again
                log.warning("%s: ignoring the existing result: %s", self.digest[:12], exc)

        # then every checkpoint in order, each newer than the last
        with tempfile.TemporaryDirectory(prefix="bucketdigest-work-") as scratch:
            for _, key in checkpoints:
                bundle = Path(scratch) / "checkpoint.zip"
                try:
                    self.store.download(key, bundle)
                    latest = read_records(bundle)
                    extract(bundle, tree, skip=[DIGESTS])
                except (NotFound, CorruptRecord, UnsafeArchive, zipfile.BadZipFile) as exc:
                    log.warning("%s: ignoring unreadable %s: %s", self.digest[:12], key, exc)
                    continue
                found = latest or found

        # what is recorded completed but has lost its files runs again; the rest is dropped
        if found is None:
            return {}
        records = found.by_output()
        for output, record in records.items():
            if record.status is OutputStatus.COMPLETED and not _verified(record, tree):
                log.info("%s: files of %s are missing; it runs again", self.digest[:12], output)
                records[output] = reset(record, now())
        done = {
            r
            for rec in records.values()
            if rec.status is OutputStatus.COMPLETED
            for r in rec.artifacts
        }
        _keep_only(tree, done)
        for record in records.values():  # a finished digester's parts are in its output
            if record.status is OutputStatus.COMPLETED:
                shutil.rmtree(tree / PARTIAL_DIR / record.digester, ignore_errors=True)
        self._note_partial(tree / PARTIAL_DIR, keep=False)
        return records

    def _request(self) -> DigestRecords | None:
        try:
            return DigestRecords.from_json(self.store.get(keys.work_request_key(self.digest)).data)
        except (NotFound, CorruptRecord) as exc:
            log.warning("%s: ignoring unreadable reprocess request: %s", self.digest[:12], exc)
            return None

    def completed(self, records: DigestRecords, files: dict[str, bytes]) -> bool:
        """Note a digester's new files and the records after it; True when a checkpoint is
        due (the unsaved work took ``checkpoint_after`` seconds or more)."""
        self._unsaved.update(files)
        self._records = records
        return time.monotonic() - self._since >= self.checkpoint_after

    def _note_partial(self, folder: Path, keep: bool = True) -> bool:
        """Take the partial work in ``folder`` that no checkpoint holds yet into the next one
        (``keep``); True if there was any."""
        found = False
        tree = folder.parent
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if not path.is_file():
                continue
            stat = path.stat()
            member, seen = path.relative_to(tree).as_posix(), (stat.st_size, stat.st_mtime_ns)
            if self._partial_seen.get(member) != seen:
                self._partial_seen[member] = seen
                if keep:
                    self._unsaved[member] = path.read_bytes()
                found = True
        return found

    def note_partial(self, folder: Path, records: DigestRecords) -> None:
        """Before a failed or interrupted digester's folder is gone: keep its partial work
        for the checkpoint that follows (with ``records`` if no newer are noted)."""
        if self._note_partial(folder) and self._records is None:
            self._records = records

    def partial_due(self, folder: Path) -> bool:
        """Whether a checkpoint of the partial work in ``folder`` is due: it took
        ``checkpoint_after`` seconds since the last one and something new was finished."""
        due = time.monotonic() - self._since >= self.checkpoint_after
        return due and self._note_partial(folder)

    @property
    def unsaved(self) -> bool:
        return self._records is not None

    def save(self, records: DigestRecords | None = None) -> None:
        """Write a checkpoint: the files completed since the last one, and ``records`` (by
        default the latest noted). The caller fences it with a heartbeat."""
        records = records or self._records
        if records is None:
            return
        key = keys.work_checkpoint_key(self.digest, self._next)
        with tempfile.TemporaryDirectory(prefix="bucketdigest-work-") as scratch:
            bundle = write_zip(
                {**self._unsaved, DIGESTS: records.to_json()}, Path(scratch) / "checkpoint.zip"
            )
            self.store.put(key, bundle.read_bytes())
        self._known.append(key)
        self._next += 1
        self._unsaved, self._records = {}, None
        self._since = time.monotonic()

    def clear(self) -> None:
        """Remove everything this job found or wrote under ``work/<hash>/`` (one request)."""
        if self._known:
            self.store.delete_many(self._known)
            self._known = []
