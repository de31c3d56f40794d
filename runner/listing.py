"""The catalogue of ingested files at any scale: the search index answers for the documents
it holds, the registry for the rest; without a usable index, the registry alone."""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from bucketdigest.monitor.catalog import (
    CatalogEntry,
    Revision,
    catalog,
    document_hash,
    fetch_result,
    resolve,
    sources_of,
    with_revisions,
)
from bucketdigest.search.catalog import indexed_locations
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import SearchIndexError
from bucketdigest.shared.manifests import read_manifests
from bucketdigest.shared.naming import display_name
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)


def list_files(
    settings: StoreSettings,
    source: str | None = None,
    *,
    all_revisions: bool = False,
    store: Store | None = None,
) -> list[CatalogEntry]:
    """Every ingested (source, path) with its document and state (``bucketdigest ls``): what
    the paths hold now, or with ``all_revisions`` also what they held before and what has
    left its source, each marked so. ``store``: the bucket ``settings`` names, if open."""
    store = store or open_store(settings, self_test=False)
    try:
        indexed = indexed_locations(settings, source)
    except SearchIndexError as exc:
        log.info("listing from the registry alone: %s", exc)
        indexed = None
    manifests = {name: manifest for name, (manifest, _) in read_manifests(store).items()}
    entries = with_revisions(catalog(store, source, indexed), manifests)
    if all_revisions:
        return entries
    return [entry for entry in entries if entry.revision is Revision.CURRENT]


def find_digest(settings: StoreSettings, path_or_hash: str, store: Store | None = None) -> str:
    """The document named by a hash or its start (8 hex digits or more, any case), or by an
    ingested path (exact, or a unique suffix)."""
    prefix = keys.hash_prefix(path_or_hash)
    if prefix is not None and len(prefix) == 64:
        return prefix
    store = store or open_store(settings, self_test=False)
    if prefix is not None and (digest := document_hash(store, path_or_hash)) is not None:
        return digest
    return resolve(store, path_or_hash, list_files(settings, store=store))


def default_destination(store: Store, digest: str) -> Path:
    """Where ``get`` unpacks a result when not told: a folder in the current one named after
    the document's file name (``rules/core.pdf`` → ``./core``)."""
    names = [record.path for record in sources_of(store, digest)]
    return Path(PurePosixPath(display_name(names, digest)).stem or digest[:12])


def get_result(
    settings: StoreSettings, path_or_hash: str, dest: Path | None, store: Store | None = None
) -> tuple[str, Path, list[str]]:
    """Find a document by hash or ingested path and unpack its result into ``dest`` (None:
    :func:`default_destination`); returns its digest, the folder and the members written
    (``bucketdigest get``). The store is opened once."""
    store = store or open_store(settings, self_test=False)
    digest = find_digest(settings, path_or_hash, store)
    dest = dest if dest is not None else default_destination(store, digest)
    return digest, dest, fetch_result(store, digest, dest)
