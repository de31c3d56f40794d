"""One indexer at a time: whoever holds ``index/writer.json`` writes to the index.

Taking it is a conditional write against the version read, so two takers cannot both win.
The object stays after a release (holder empty), and its LastModified then says when the index
was last brought up to date, which lets a fleet of workers index at most once per interval
between them. A holder that died is replaced once its lease has expired on the store's clock.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bucketdigest.shared import keys
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.records import IndexerLease
from bucketdigest.shared.store import Store, StoredObject


@dataclass(frozen=True)
class HeldLease:
    """The lease as we wrote it, and the ETag that proves it is ours."""

    lease: IndexerLease
    etag: str


@dataclass(frozen=True)
class Busy:
    """Why the lease was not taken: someone holds it, or the index is fresh enough."""

    reason: str


def acquire(
    store: Store, holder: str, seconds: float, min_interval: float = 0.0
) -> HeldLease | Busy:
    """Take the lease for ``seconds``, unless another live holder has it, or (with
    ``min_interval``) the index was brought up to date less than that long ago."""
    now = store.now()
    mine = IndexerLease(
        holder=holder, token=secrets.token_hex(8), since=now, until=now + timedelta(seconds=seconds)
    )
    try:
        current = store.get(keys.INDEX_WRITER_KEY)
    except NotFound:
        etag = store.put_if_absent(keys.INDEX_WRITER_KEY, mine.to_json())
        return HeldLease(mine, etag) if etag else Busy("another indexer has just started")
    if (busy := _busy(current, now, min_interval)) is not None:
        return busy
    etag = store.put_if_match(keys.INDEX_WRITER_KEY, mine.to_json(), current.etag)
    return HeldLease(mine, etag) if etag else Busy("another indexer has just started")


def busy(store: Store, min_interval: float = 0.0) -> Busy | None:
    """Why :func:`acquire` would not take the lease now, read without writing anything, so a
    worker can see there is nothing for it to do before it starts an indexer; None when the
    lease is free to take."""
    try:
        current = store.get(keys.INDEX_WRITER_KEY)
    except NotFound:
        return None
    return _busy(current, store.now(), min_interval)


def _busy(current: StoredObject, now: datetime, min_interval: float) -> Busy | None:
    """The stored lease at ``now``: held by a live holder, or released less than
    ``min_interval`` seconds ago (a damaged one is free to take)."""
    try:
        lease = IndexerLease.from_json(current.data)
    except CorruptRecord:
        return None
    if lease.holder and now <= lease.until:
        return Busy(f"{lease.holder} is indexing (since {lease.since:%H:%M:%S})")
    if not lease.holder and now - current.last_modified < timedelta(seconds=min_interval):
        return Busy("the index was brought up to date moments ago")
    return None


def renew(store: Store, held: HeldLease, seconds: float) -> HeldLease | None:
    """Extend the lease; None if it is no longer ours."""
    lease = replace(held.lease, until=store.now() + timedelta(seconds=seconds))
    etag = store.put_if_match(keys.INDEX_WRITER_KEY, lease.to_json(), held.etag)
    return HeldLease(lease, etag) if etag else None


def release(
    store: Store, held: HeldLease, report: str, skipped: dict[str, str] | None = None
) -> None:
    """Give the lease up, leaving a line on what the last run did and the documents it could
    not index, with why (``status`` shows them)."""
    free = replace(held.lease, holder="", token="", last_report=report, skipped=skipped or None)
    store.put_if_match(keys.INDEX_WRITER_KEY, free.to_json(), held.etag)
