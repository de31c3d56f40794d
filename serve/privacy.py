"""What anonymous clients are told about where documents came from: a server on a network must
not hand out the folders of the machine that ingested them, nor the names of the machines that
worked on them (``serve --show-locations`` tells everything, for a server on a trusted network).

A web source (``https://site/...``) is public by nature and is shown without its credentials;
any other source (a folder, a ``file://`` URL, a repository path) is shown by its last
component: ``/home/ana/library/rulebooks`` becomes ``…/rulebooks``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bucketdigest.monitor.status import Status
from bucketdigest.search.hit import Hit
from bucketdigest.serve.documents import DocumentView
from bucketdigest.shared.result import DIGESTS, INFO

HIDDEN = "…"


def public_source(source: str) -> str:
    """``source`` as an anonymous client may see it."""
    parts = urlsplit(source)
    if parts.scheme in ("http", "https") and parts.hostname:
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, host, parts.path, parts.query, ""))
    last = source.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return f"{HIDDEN}/{last}" if last else HIDDEN


def public_path(path: str) -> str:
    """A file's path inside its source is the document's name, but an absolute one (an ingest
    error on a file given by its full path) is cut to the file name."""
    return public_source(path) if path.startswith(("/", "\\")) or ":" in path[:3] else path


def public_hit(hit: Hit) -> Hit:
    return replace(hit, sources=tuple(public_source(s) for s in hit.sources))


def public_document(view: DocumentView) -> DocumentView:
    sources = tuple(
        replace(record, source=public_source(record.source), path=public_path(record.path))
        for record in view.sources
    )
    failure = view.failure
    if failure is not None:
        history = tuple(replace(a, worker_id=HIDDEN) for a in failure.ticket.history)
        failure = replace(
            failure,
            worker_id=HIDDEN,
            traceback="",
            ticket=replace(failure.ticket, history=history),
        )
    return replace(view, sources=sources, failure=failure, info=_without_workers(view.info))


def _without_workers(data: Any) -> Any:
    """``info.json`` (which says which worker processed the document) without worker ids."""
    if isinstance(data, dict):
        return {k: _without_workers(v) for k, v in data.items() if k != "worker_id"}
    if isinstance(data, list):
        return [_without_workers(v) for v in data]
    return data


def public_member(name: str, data: bytes) -> bytes:
    """A result member as an anonymous client may read it: ``info.json`` and ``digests.json``
    without the ids of the workers (machine names) that made the result."""
    if name not in (INFO, DIGESTS):
        return data
    try:
        parsed = json.loads(data)
    except ValueError:
        return data
    return (json.dumps(_without_workers(parsed), indent=2, ensure_ascii=False) + "\n").encode()


def public_status(status: Status) -> Status:
    runs = [
        replace(
            run,
            sources=tuple(public_source(s) for s in run.sources),
            errors=tuple(replace(e, path=public_path(e.path)) for e in run.errors),
            removed=tuple(replace(r, path=public_path(r.path)) for r in run.removed),
        )
        for run in status.runs
    ]
    waiting = [replace(note, worker_id=HIDDEN) for note in status.waiting]
    return replace(status, runs=runs, waiting=waiting)


def without_location(text: str, uri: str) -> str:
    """An error message about the index without the index's local path or bucket URL."""
    return text.replace(uri, "the bucket's index")
