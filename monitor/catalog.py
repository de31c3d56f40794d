"""The registry as a catalogue: which file a document is, and fetching a document's result."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.archives import extract
from bucketdigest.shared.errors import BucketdigestError, DamagedResult, NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import SourceManifest, SourceRecord
from bucketdigest.shared.result import damage
from bucketdigest.shared.store import Store


class Revision(StrEnum):
    """Whether an ingested file is what its path holds now."""

    CURRENT = "current"
    SUPERSEDED = "superseded"
    REMOVED = "removed"


@dataclass(frozen=True)
class CatalogEntry:
    """One source path, the document it holds, and where that document is now (None: the
    bucket has no trace of it). ``record`` is the registry record when it was read (the
    index alone does not carry sizes and ingest times)."""

    source: str
    path: str
    digest: str
    state: DocState | None
    record: SourceRecord | None = None
    revision: Revision = Revision.CURRENT


def with_revisions(
    entries: list[CatalogEntry], manifests: Mapping[str, SourceManifest]
) -> list[CatalogEntry]:
    """``entries`` marked current, superseded (their path holds another document now) or
    removed (their path is gone), by their sources' manifests; an entry of a source without
    a manifest counts as current."""
    held = {name: {p.path: p.digest for p in m.paths} for name, m in manifests.items()}
    marked = []
    for entry in entries:
        paths = held.get(entry.source)
        if paths is None or paths.get(entry.path) == entry.digest:
            revision = Revision.CURRENT
        elif entry.path in paths:
            revision = Revision.SUPERSEDED
        else:
            revision = Revision.REMOVED
        marked.append(replace(entry, revision=revision))
    return marked


def _entry(record: SourceRecord, state: DocState | None) -> CatalogEntry:
    return CatalogEntry(record.source, record.path, record.digest, state, record)


def catalog(
    store: Store,
    source: str | None = None,
    indexed: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> list[CatalogEntry]:
    """Every registered (source, path), optionally of sources containing ``source``.

    Without ``indexed`` every registry record is read (a GET each). With it (digest →
    (source, path) pairs of the indexed documents, already filtered by ``source``), only the
    registry's listing is read, and the records of documents the index does not hold yet
    (queued, failed, just finished): 1,000 files a request instead of one."""
    if indexed is None:
        states = queue.document_states(store)
        records = (
            SourceRecord.from_json(store.get(info.key).data)
            for info in store.list(keys.REGISTRY_DOCS_PREFIX)
        )
        entries = [
            _entry(record, states.get(record.digest))
            for record in records
            if source is None or source in record.source
        ]
    else:
        entries = _catalog_with_index(store, source, indexed)
    return sorted(entries, key=lambda e: (e.source, e.path))


def _catalog_with_index(
    store: Store, source: str | None, indexed: Mapping[str, Sequence[tuple[str, str]]]
) -> list[CatalogEntry]:
    marked = {
        digest: DocState.of(state)
        for state in QueueState
        for digest, _ in queue.markers(store, state)
    }
    entries = [
        CatalogEntry(where_from, path, digest, marked.get(digest, DocState.DONE))
        for digest, pairs in indexed.items()
        for where_from, path in pairs
    ]
    for info in store.list(keys.REGISTRY_DOCS_PREFIX):
        digest, _ = keys.parse_registry_doc_key(info.key)
        if digest in indexed:
            continue
        record = SourceRecord.from_json(store.get(info.key).data)
        if source is None or source in record.source:
            state = marked.get(digest) or queue.state_of(store, digest)
            entries.append(_entry(record, state))
    return entries


def sources_of(store: Store, digest: str) -> list[SourceRecord]:
    """Every (source, path) the document ``digest`` was ingested from."""
    records = [
        SourceRecord.from_json(store.get(info.key).data)
        for info in store.list(keys.registry_doc_prefix(digest))
    ]
    return sorted(records, key=lambda r: (r.source, r.path))


def hashes_starting(store: Store, prefix: str) -> set[str]:
    """The documents (sources or results in the bucket) whose hash starts with ``prefix``."""
    found = {keys.parse_raw_key(info.key)[0] for info in store.list(keys.RAW_PREFIX + prefix)}
    found |= {keys.parse_out_key(info.key) for info in store.list(keys.OUT_PREFIX + prefix)}
    return found


def document_hash(store: Store, value: str) -> str | None:
    """The document whose hash is ``value`` or starts with it (8 hex digits or more, any
    case); None when ``value`` is no hash nor the start of one's, or no document's hash starts
    so; BucketdigestError when several do."""
    prefix = keys.hash_prefix(value)
    if prefix is None or len(prefix) == 64:
        return prefix
    found = hashes_starting(store, prefix)
    if len(found) > 1:
        raise BucketdigestError(
            f"{value}: the hashes of {len(found)} documents start so; give more of the hash"
        )
    return found.pop() if found else None


def resolve(store: Store, path_or_hash: str, entries: list[CatalogEntry] | None = None) -> str:
    """The digest named by a hash or its start (8 hex digits or more, any case), or by a
    registered path (exact, or a unique path suffix) among ``entries`` (default: the whole
    catalogue)."""
    digest = document_hash(store, path_or_hash)
    if digest is not None:
        return digest
    matches = {
        entry.digest
        for entry in (catalog(store) if entries is None else entries)
        if entry.path == path_or_hash or entry.path.endswith("/" + path_or_hash)
    }
    if not matches:
        if keys.short_hash_prefix(path_or_hash):
            raise BucketdigestError(
                f"{path_or_hash}: no registered file has this path, and a hash's start must "
                f"be {keys.HASH_PREFIX_LENGTH} hex digits or more to name a document"
            )
        named = "no document's hash starts so, and " if keys.hash_prefix(path_or_hash) else ""
        raise BucketdigestError(f"{path_or_hash}: {named}no registered file has this path")
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
    reason = damage(data)
    if reason is not None:
        raise DamagedResult(digest, reason)
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return extract(archive, dest)
