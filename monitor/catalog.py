"""The registry as a catalogue: which file a document is, and fetching a document's result."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import BucketdigestError, NotFound
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class CatalogEntry:
    """One source path, the document it holds, and where that document is now (None: the
    bucket has no trace of it)."""

    record: SourceRecord
    state: DocState | None


def catalog(store: Store, source: str | None = None) -> list[CatalogEntry]:
    """Every registered (source, path), optionally of sources containing ``source``."""
    states = queue.document_states(store)
    entries = []
    for info in store.list(keys.REGISTRY_DOCS_PREFIX):
        record = SourceRecord.from_json(store.get(info.key).data)
        if source is None or source in record.source:
            entries.append(CatalogEntry(record, states.get(record.digest)))
    return sorted(entries, key=lambda e: (e.record.source, e.record.path))


def sources_of(store: Store, digest: str) -> list[SourceRecord]:
    """Every (source, path) the document ``digest`` was ingested from."""
    records = [
        SourceRecord.from_json(store.get(info.key).data)
        for info in store.list(keys.registry_doc_prefix(digest))
    ]
    return sorted(records, key=lambda r: (r.source, r.path))


def resolve(store: Store, path_or_hash: str) -> str:
    """The digest named by a hash, or by a registered path (exact, or a unique path suffix)."""
    try:
        return keys.check_hash(path_or_hash)
    except ValueError:
        pass
    matches = {
        entry.record.digest
        for entry in catalog(store)
        if entry.record.path == path_or_hash or entry.record.path.endswith("/" + path_or_hash)
    }
    if not matches:
        raise BucketdigestError(f"{path_or_hash}: no registered file has this path")
    if len(matches) > 1:
        raise BucketdigestError(
            f"{path_or_hash}: matches {len(matches)} different documents; give the hash"
        )
    return matches.pop()


def fetch_result(store: Store, digest: str, dest: Path) -> list[str]:
    """Download ``store/out/<digest>.zip`` and unpack it into ``dest``; returns member names."""
    try:
        data = store.get(keys.out_key(digest)).data
    except NotFound as exc:
        state = queue.state_of(store, digest) or "unknown to this bucket"
        raise BucketdigestError(f"{digest}: no result yet (state: {state})") from exc
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(dest)
        return archive.namelist()
