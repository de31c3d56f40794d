"""A job's partial progress in the bucket (``work/<hash>/``), so a reclaimed job resumes after
the last completed digester instead of starting over.

After each completed digester its files are written to ``work/<hash>/<digester>.zip`` first and
the records to ``work/<hash>/digests.json`` second, so the records never claim files that are
not there. A reprocess request is a ``digests.json`` alone whose completed records point into
the existing result zip. Everything under the prefix is removed once the result zip is written.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.store import Store
from bucketdigest.worker.digesters.state import fingerprint, reset
from bucketdigest.worker.package import read_members, read_records, write_zip

log = logging.getLogger(__name__)


def _restore(
    store: Store,
    digest: str,
    digester: str,
    records: list[OutputRecord],
    tree: Path,
    listed: set[str],
    previous: Path | None,
) -> bool:
    """Put a completed digester's files back in ``tree``; False if they cannot be found whole."""
    wanted = {name for record in records for name in record.artifacts}
    key = keys.work_output_key(digest, digester)
    if key in listed:
        with tempfile.TemporaryDirectory(prefix="bucketdigest-work-") as scratch:
            bundle = Path(scratch) / "bundle.zip"
            try:
                store.download(key, bundle)
            except NotFound:
                return False
            files = read_members(bundle, wanted)
    elif previous is not None:
        files = read_members(previous, wanted)
    else:
        return False
    for record in records:
        mine = {name: files[name] for name in record.artifacts if name in files}
        if len(mine) != len(record.artifacts) or fingerprint(mine) != record.content_sha256:
            return False
    for name, data in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    return True


def load_progress(
    store: Store, digest: str, tree: Path, previous: Path | None, now: Callable[[], datetime]
) -> dict[str, OutputRecord]:
    """The records to resume from, with completed outputs' files restored into ``tree``.

    Sources, latest first: ``work/<hash>/digests.json``, else the records of ``previous`` (the
    existing result zip, when reprocessing). A completed output whose files are missing or do
    not match their fingerprint is reset to ``todo`` and simply made again.
    """
    listed = {info.key for info in store.list(keys.work_prefix(digest))}
    found: DigestRecords | None = None
    if keys.work_state_key(digest) in listed:
        try:
            found = DigestRecords.from_json(store.get(keys.work_state_key(digest)).data)
        except (NotFound, CorruptRecord) as exc:
            log.warning("%s: ignoring unreadable progress record: %s", digest[:12], exc)
    if found is None and previous is not None:
        found = read_records(previous)
    if found is None:
        return {}
    records = found.by_output()
    by_digester: dict[str, list[OutputRecord]] = {}
    for record in records.values():
        if record.status is OutputStatus.COMPLETED:
            by_digester.setdefault(record.digester, []).append(record)
    for digester, completed in by_digester.items():
        if not _restore(store, digest, digester, completed, tree, listed, previous):
            log.info("%s: files of %s are missing; it runs again", digest[:12], digester)
            for record in completed:
                records[record.output] = reset(record, now())
    return records


def save_output(store: Store, digest: str, digester: str, files: Mapping[str, bytes]) -> None:
    with tempfile.TemporaryDirectory(prefix="bucketdigest-work-") as scratch:
        bundle = write_zip(files, Path(scratch) / "bundle.zip")
        store.put(keys.work_output_key(digest, digester), bundle.read_bytes())


def save_records(store: Store, records: DigestRecords) -> None:
    store.put(keys.work_state_key(records.digest), records.to_json())


def clear_progress(store: Store, digest: str) -> None:
    """Remove everything under ``work/<hash>/``."""
    for info in list(store.list(keys.work_prefix(digest))):
        store.delete(info.key)
