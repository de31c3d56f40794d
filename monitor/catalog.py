"""The registry as a catalogue: which file a document is, and fetching a document's result."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.store import Store

_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CatalogEntry:
    """One source path, the document it holds, and where that document is now."""

    record: SourceRecord
    state: str


def document_states(store: Store) -> dict[str, str]:
    """digest → ``done``/``todo``/``processing``/``failed`` for every document with a state."""
    states: dict[str, str] = {}
    for state in QueueState:
        for info in store.list(state.prefix):
            states[keys.parse_queue_key(info.key)[1]] = state.value
    for info in store.list(keys.OUT_PREFIX):
        states[keys.parse_out_key(info.key)] = "done"
    return states


def catalog(store: Store, source: str | None = None) -> list[CatalogEntry]:
    """Every registered (source, path), optionally of sources containing ``source``."""
    states = document_states(store)
    entries = []
    for info in store.list(keys.REGISTRY_DOCS_PREFIX):
        record = SourceRecord.from_json(store.get(info.key).data)
        if source is None or source in record.source:
            entries.append(CatalogEntry(record, states.get(record.digest, "unknown")))
    return sorted(entries, key=lambda e: (e.record.source, e.record.path))


def resolve(store: Store, path_or_hash: str) -> str:
    """The digest named by a hash, or by a registered path (exact, or a unique path suffix)."""
    if _HASH.fullmatch(path_or_hash):
        return path_or_hash
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
        state = document_states(store).get(digest, "unknown to this bucket")
        raise BucketdigestError(f"{digest}: no result yet (state: {state})") from exc
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(dest)
        return archive.namelist()
