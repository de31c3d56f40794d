"""Reading the sources' manifests (``registry/sources/``): what each source held at its
latest ingest. Written by the ingestor (``ingestor/manifest.py``), read by purge and ``ls``."""

from __future__ import annotations

import logging

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import SourceManifest
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)


def read_manifest(store: Store, source: str) -> SourceManifest | None:
    try:
        return SourceManifest.from_json(store.get(keys.source_manifest_key(source)).data)
    except (NotFound, CorruptRecord):
        return None


def read_manifests(store: Store) -> dict[str, tuple[SourceManifest, str]]:
    """Every source's manifest and its ETag, by source name."""
    found = {}
    for info in store.list(keys.REGISTRY_SOURCES_PREFIX):
        try:
            marker = store.get(info.key)
            manifest = SourceManifest.from_json(marker.data)
        except (NotFound, CorruptRecord) as exc:
            log.warning("%s: %s; its source counts as unknown", info.key, exc)
            continue
        found[manifest.source] = (manifest, marker.etag)
    return found
