"""What is in the bucket: counts per state, throughput and ETA, recent failures, latest ingest
runs, and the objects found damaged. Read-only."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from bucketdigest.monitor.damage import damaged_objects
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import read_settings
from bucketdigest.shared.errors import ConfigError, CorruptRecord, NotFound
from bucketdigest.shared.inbox import inbox_objects, inbox_refusals
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import InboxRefusal, IndexerLease, IngestRun, WorkerNote
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class FailureSummary:
    digest: str
    name: str
    attempt: int
    error: str
    failed_at: str


@dataclass
class Status:
    """Counts per state (exactly the keys todo, processing, failed, done) and details."""

    counts: dict[str, int]
    failures: list[FailureSummary] = field(default_factory=list)
    runs: list[IngestRun] = field(default_factory=list)
    done_per_minute: list[int] = field(default_factory=list)
    """Results written in each of the last ``WINDOW_MINUTES`` minutes, oldest first."""
    as_of: datetime | None = None
    """The store's clock when the status was read."""
    waiting: list[WorkerNote] = field(default_factory=list)
    """Workers waiting for their run window."""
    settings_version: int = 0
    """The version of the bucket's settings (0: none set)."""
    events: dict[str, int] = field(default_factory=dict)
    """Events waiting to be delivered (``pending``) and given up on (``undeliverable``)."""
    inbox: int = 0
    """Objects in ``inbox/`` (waiting to be taken in, or refused)."""
    refused: list[InboxRefusal] = field(default_factory=list)
    """Inbox objects that cannot be taken in, and why (they stay in the inbox)."""
    damaged: dict[str, str] = field(default_factory=dict)
    """Objects found damaged (by the damage check, or results the indexer could not read),
    by key, with what is wrong and what is being done."""

    @property
    def rate_per_minute(self) -> float:
        """Documents done per minute since the first result of the last hour (526 done in the
        last 6 minutes is about 88 a minute, not 8.8)."""
        first = next((n for n, done in enumerate(self.done_per_minute) if done), None)
        if first is None:
            return 0.0
        return sum(self.done_per_minute) / (len(self.done_per_minute) - first)

    @property
    def eta_seconds(self) -> float | None:
        """Time until todo and processing are done at the last hour's rate (None: no rate)."""
        left = self.counts[DocState.TODO] + self.counts[DocState.PROCESSING]
        if left == 0:
            return 0.0
        return 60.0 * left / self.rate_per_minute if self.rate_per_minute else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form shared by ``status --json`` and the HTTP API."""
        eta = self.eta_seconds
        return {
            "counts": self.counts,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "done_per_minute": self.done_per_minute,
            "rate_per_minute": round(self.rate_per_minute, 3),
            "eta_seconds": None if eta is None else round(eta, 1),
            "failures": [asdict(f) for f in self.failures],
            "runs": [json.loads(r.to_json()) for r in self.runs],
            "waiting": [json.loads(w.to_json()) for w in self.waiting],
            "damaged": self.damaged,
            "settings_version": self.settings_version,
            "events": self.events,
            "inbox": {
                "objects": self.inbox,
                "refused": [json.loads(r.to_json()) for r in self.refused],
            },
        }


WINDOW_MINUTES = 60


def describe_time_left(seconds: float | None) -> str:
    """:attr:`Status.eta_seconds` for people: ``nothing left`` when it is 0, else as
    :func:`describe_duration` says it."""
    return "nothing left" if seconds == 0 else describe_duration(seconds)


def describe_duration(seconds: float | None) -> str:
    """``2 h 05 min``, ``4 min``, ``under a minute``; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def _count_per_minute(finished: Iterable[float], now: datetime) -> tuple[int, list[int]]:
    """How many results there are, and how many were written in each of the last
    ``WINDOW_MINUTES`` minutes, from each result's mtime (one pass over a million)."""
    buckets = [0] * WINDOW_MINUTES
    end = now.timestamp()
    start = end - 60 * WINDOW_MINUTES
    total = 0
    for total, stamp in enumerate(finished, start=1):  # noqa: B007 (the count is the last)
        if start <= stamp <= end:
            buckets[min(int((stamp - start) // 60), WINDOW_MINUTES - 1)] += 1
    return total, buckets


def collect_status(store: Store, *, failures: int = 10, runs: int = 5) -> Status:
    """Count every state, the last hour's results per minute, and read the most recent
    failures and ingest runs."""
    now = store.now()
    counts = dict.fromkeys(DocState, 0)
    failed = []

    # counts: a listing per queue folder, and the results' times
    for state in QueueState:
        for digest, info in queue.markers(store, state):
            counts[DocState.of(state)] += 1
            if state is QueueState.FAILED:
                failed.append((info.last_modified, digest))
    finished = store.modified_times(keys.OUT_PREFIX)
    counts[DocState.DONE], per_minute = _count_per_minute(finished, now)
    status = Status(
        counts={state.value: n for state, n in counts.items()},
        done_per_minute=per_minute,
        as_of=now,
    )

    # the latest failures, ingest runs and waiting workers; what is damaged
    for _, digest in sorted(failed, reverse=True)[:failures]:
        try:
            failure = queue.read_failure(store, digest)
        except CorruptRecord as exc:
            status.damaged[keys.queue_key(QueueState.FAILED, digest)] = str(exc)
            continue
        if failure is not None:
            status.failures.append(
                FailureSummary(
                    digest=digest,
                    name=failure.ticket.name,
                    attempt=failure.ticket.attempt,
                    error=failure.error,
                    failed_at=failure.failed_at.isoformat(),
                )
            )

    run_keys = sorted(
        (
            info.key
            for info in store.list(keys.REGISTRY_RUNS_PREFIX)
            if keys.run_kind(info.key) is keys.RunKind.INGEST
        ),
        reverse=True,
    )
    for key in run_keys[:runs]:
        try:
            status.runs.append(IngestRun.from_json(store.get(key).data))
        except (NotFound, CorruptRecord) as exc:
            status.damaged.setdefault(key, str(exc))

    status.waiting = _waiting_workers(store)
    status.events = {
        state.value: sum(1 for _ in store.list(keys.event_prefix(state)))
        for state in keys.EventState
    }
    present = {info.key for info in inbox_objects(store)}
    status.inbox = len(present)
    if present:  # a refusal whose object has gone since is not shown
        status.refused = [r for r in inbox_refusals(store) if keys.INBOX_PREFIX + r.name in present]
    try:
        status.settings_version = read_settings(store)[0].version
    except ConfigError as exc:
        status.damaged[keys.SETTINGS_KEY] = str(exc)
    status.damaged.update(damaged_objects(store))
    status.damaged.update(_unindexed(store))
    return status


def _unindexed(store: Store) -> dict[str, str]:
    """Results the last indexer run could not read, by key (what it left in its lease)."""
    try:
        lease = IndexerLease.from_json(store.get(keys.INDEX_WRITER_KEY).data)
    except (NotFound, CorruptRecord):
        return {}
    return {
        keys.out_key(digest): f"not searchable: {reason}"
        for digest, reason in (lease.skipped or {}).items()
    }


def _waiting_workers(store: Store) -> list[WorkerNote]:
    notes = []
    for info in store.list(keys.WORKERS_PREFIX):
        try:
            notes.append(WorkerNote.from_json(store.get(info.key).data))
        except (NotFound, CorruptRecord):
            continue  # gone meanwhile, or not ours
    return sorted(notes, key=lambda note: note.opens_at)
