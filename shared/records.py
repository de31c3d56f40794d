"""The JSON markers and records kept in the bucket, as frozen dataclasses.

Each encodes to indented, key-sorted JSON a person can read with ``aws s3 cp s3://b/KEY -`` and
carries ``schema_version`` so later versions can read older markers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from typing import Any, Self

from bucketdigest.shared.clock import format_time, parse_time

SCHEMA_VERSION = 1


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


class _JsonRecord:
    """Mixin: ``to_json``/``from_json`` for flat dataclasses with datetime and tuple fields."""

    _time_fields: tuple[str, ...] = ()

    def to_json(self) -> bytes:
        data = {"schema_version": SCHEMA_VERSION, **_encode(asdict(self))}  # type: ignore[call-overload]
        return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        values = {k: v for k, v in data.items() if k in known}
        for name in cls._time_fields:
            if values.get(name) is not None:
                values[name] = parse_time(values[name])
        for name, value in values.items():
            if isinstance(value, list):
                values[name] = tuple(value)
        return cls(**values)

    @classmethod
    def from_json(cls, raw: bytes) -> Self:
        return cls.from_dict(json.loads(raw))


@dataclass(frozen=True)
class Attempt(_JsonRecord):
    """One past attempt at a job: who, when, and how it ended."""

    attempt: int
    worker_id: str
    claimed_at: datetime
    ended_at: datetime
    outcome: str
    error: str = ""

    _time_fields = ("claimed_at", "ended_at")


@dataclass(frozen=True)
class Ticket(_JsonRecord):
    """What every queue marker says about the job itself; it travels todo → processing → failed."""

    digest: str
    ext: str
    size: int
    names: tuple[str, ...]
    enqueued_at: datetime
    attempt: int = 1
    history: tuple[Attempt, ...] = ()
    not_before: datetime | None = None

    _time_fields = ("enqueued_at", "not_before")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        ticket = super().from_dict(data)
        history = tuple(
            item if isinstance(item, Attempt) else Attempt.from_dict(item)
            for item in ticket.history
        )
        return replace(ticket, history=history)


@dataclass(frozen=True)
class Claim(_JsonRecord):
    """The processing marker: who holds the job, under which token, until when."""

    ticket: Ticket
    worker_id: str
    token: str
    claimed_at: datetime
    heartbeat_at: datetime
    lease_until: datetime

    _time_fields = ("claimed_at", "heartbeat_at", "lease_until")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        claim = super().from_dict({k: v for k, v in data.items() if k != "ticket"})
        return replace(claim, ticket=Ticket.from_dict(data["ticket"]))


@dataclass(frozen=True)
class Failure(_JsonRecord):
    """The failed marker: the last error with its traceback, and whether a retry may help."""

    ticket: Ticket
    worker_id: str
    failed_at: datetime
    error: str
    traceback: str = ""
    retryable: bool = True

    _time_fields = ("failed_at",)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        failure = super().from_dict({k: v for k, v in data.items() if k != "ticket"})
        return replace(failure, ticket=Ticket.from_dict(data["ticket"]))


@dataclass(frozen=True)
class SourceRecord(_JsonRecord):
    """Registry entry: one path of one source holds the document ``digest``."""

    digest: str
    source: str
    path: str
    size: int
    ingested_at: datetime
    commit: str = ""

    _time_fields = ("ingested_at",)


@dataclass(frozen=True)
class FileError(_JsonRecord):
    """A file an ingest run could not take, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class IngestRun(_JsonRecord):
    """What one ingest run did, kept at ``registry/runs/<run-id>.json``."""

    run_id: str
    sources: tuple[str, ...]
    started_at: datetime
    finished_at: datetime
    discovered: int = 0
    already_done: int = 0
    uploaded: int = 0
    queued: int = 0
    errors: tuple[FileError, ...] = field(default_factory=tuple)
    bytes_uploaded: int = 0
    store_requests: int = 0

    _time_fields = ("started_at", "finished_at")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        run = super().from_dict(data)
        errors = tuple(e if isinstance(e, FileError) else FileError.from_dict(e) for e in run.errors)
        return replace(run, errors=errors)
