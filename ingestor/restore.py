"""Fetching a document's source again from where it was ingested, for a document whose
``store/raw/`` object a cleanup-mode worker deleted (``work --delete-source-when-done``) and
that must run again (``retry``, ``reprocess``). Only bytes with the document's SHA-256 are
taken: a file that changed since is a different document."""

from __future__ import annotations

from pathlib import Path

from bucketdigest.ingestor.git import GitSource, is_git_url, is_local_repository
from bucketdigest.ingestor.ingest import sha256_file
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.records import FileError, SourceRecord
from bucketdigest.shared.store import Store


def _upload_if_same(store: Store, digest: str, ext: str, path: Path) -> str | None:
    """Upload ``path`` as the source of ``digest`` if it has that hash (over a damaged copy
    too: only the right bytes are ever written)."""
    found, _ = sha256_file(path)
    if found != digest:
        return f"{path} holds other content now"
    store.put(keys.raw_key(digest, ext), path)
    return None


def _from_git(store: Store, record: SourceRecord, ext: str, cache_dir: Path) -> str | None:
    source = GitSource(
        record.source, FileFilter(exts=frozenset({ext})), cache_dir, record.commit or "HEAD"
    )
    for candidate in source.candidates():
        if not isinstance(candidate, FileError) and candidate.relative == record.path:
            with candidate.materialize() as path:
                return _upload_if_same(store, record.digest, ext, path)
    return f"{record.source} has no {record.path} at {source.commit[:12]}"


def _from_folder(store: Store, record: SourceRecord, ext: str) -> str | None:
    root = Path(record.source)
    path = root if root.is_file() else root / record.path
    if not path.is_file():
        return f"{path} is not there any more"
    return _upload_if_same(store, record.digest, ext, path)


def restore_source(
    store: Store, digest: str, cache_dir: Path, *, damaged: bool = False
) -> str | None:
    """Make sure ``store/raw/`` holds ``digest``'s source, fetching it again from a folder or
    repository it was ingested from; None when it is there, else why it could not be.
    ``damaged``: the stored copy is known not to have its hash (the monitor's damage check
    said so), so it is fetched again as if it were missing."""
    if not damaged and any(True for _ in store.list(keys.raw_prefix(digest), limit=1)):
        return None
    records = [
        SourceRecord.from_json(store.get(info.key).data)
        for info in store.list(keys.registry_doc_prefix(digest))
    ]
    if not records:
        return "its source is not in the store and no folder or repository is registered"
    reasons = []
    for record in records:
        ext = keys.normalize_ext(record.path.rsplit(".", 1)[-1])
        try:
            if is_git_url(record.source) or is_local_repository(Path(record.source)):
                reason = _from_git(store, record, ext, cache_dir)
            else:
                reason = _from_folder(store, record, ext)
        except (OSError, BucketdigestError) as exc:
            reason = f"{record.source}: {exc}"
        if reason is None:
            return None
        reasons.append(reason)
    lacking = "is damaged in the store" if damaged else "is not in the store"
    return f"its source {lacking} and cannot be fetched again: " + "; ".join(reasons)
