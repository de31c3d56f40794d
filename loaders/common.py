"""What both loaders share: the bucket they read, and each done document's chunks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared.naming import display_name
from bucketdigest.shared.queue import DocState


def bucket_of(bucket: str | Path | Bucket) -> Bucket:
    return bucket if isinstance(bucket, Bucket) else Bucket(bucket)


def done_chunks(bucket: Bucket, path: str | None = None) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(the catalog entry, a chunk) for every chunk of every done document, once a document
    (``path``: only the documents at ingested paths matching this glob)."""
    seen: set[str] = set()
    for entry in bucket.files():
        if entry.state is not DocState.DONE or entry.digest in seen:
            continue
        if path is not None and not Path(entry.path).match(path):
            continue
        seen.add(entry.digest)
        for chunk in bucket.chunks(entry.digest):
            yield entry, chunk


def chunk_metadata(entry: Any, chunk: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {
        "hash": entry.digest,
        "title": display_name(names, entry.digest),
        "names": names,
        "source": entry.path,
        "page": chunk.get("page"),
        "headings": list(chunk.get("headings") or ()),
        "chunk_id": chunk.get("id"),
        "blocks": list(chunk.get("blocks") or ()),
        "regions": list(chunk.get("regions") or ()),
    }
