"""What a source holds, ingest after ingest: an ingest run knows a source's complete listing,
so the paths that were there last time and are gone now are recorded as removed (with the
run and the time), and the documents a path held before it changed as superseded, for
``bucketdigest purge`` to act on after a grace period. A path that comes back (or goes back
to its earlier content) stops being removed (superseded).

Two ingests of one source at the same moment: the later manifest wins, and at worst a path
removal is noticed one ingest late.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from bucketdigest.shared import keys
from bucketdigest.shared.manifests import read_manifest
from bucketdigest.shared.records import ManifestPath, RemovedPath, SourceManifest
from bucketdigest.shared.store import Store


def update_manifest(
    store: Store,
    source: str,
    present: Mapping[str, str],
    unreadable: Collection[str],
    run_id: str,
    now: datetime,
) -> tuple[RemovedPath, ...]:
    """Record that ``source`` now holds ``present`` (path → digest), and also, as before,
    the ``unreadable`` paths (still there, not taken this time); returns the paths removed
    since the previous ingest."""
    previous = read_manifest(store, source)
    before = {p.path: p.digest for p in previous.paths} if previous else {}
    held = dict(present)
    for path in unreadable:
        if path in before and path not in held:
            held[path] = before[path]

    # paths gone since last time, and paths whose file changed (older revisions)
    gone = tuple(
        RemovedPath(path, digest, run_id, now)
        for path, digest in sorted(before.items())
        if path not in held
    )
    still_gone = tuple(r for r in (previous.removed if previous else ()) if r.path not in held)
    replaced = tuple(
        RemovedPath(path, before[path], run_id, now)
        for path, digest in sorted(held.items())
        if path in before and before[path] != digest
    )
    older = tuple(
        r for r in (previous.superseded if previous else ()) if held.get(r.path) != r.digest
    )

    manifest = SourceManifest(
        source=source,
        run_id=run_id,
        updated_at=now,
        paths=tuple(ManifestPath(path, digest) for path, digest in sorted(held.items())),
        removed=still_gone + gone,
        superseded=older + replaced,
    )
    store.put(keys.source_manifest_key(source), manifest.to_json())
    return gone
