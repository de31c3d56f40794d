"""The output state machine, transition by transition.

``todo → in-progress → completed | failed``; ``skipped`` is decided once, from the file type;
``failed`` goes back to ``in-progress`` while attempts are left; a reset (cascade or reprocess)
sends any record but ``skipped`` back to ``todo`` with fresh attempts. Every transition returns
a new record; nothing here touches the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from bucketdigest.shared.filetypes import FileType
from bucketdigest.shared.records import OutputRecord, OutputStatus
from bucketdigest.worker.digester import Digester


class TransitionError(ValueError):
    """A transition the state machine does not allow (a bug in the caller)."""


def plan(
    chain: Sequence[Digester],
    file: FileType,
    now: datetime,
    existing: Mapping[str, OutputRecord] | None = None,
) -> dict[str, OutputRecord]:
    """Every output of the chain for a file of type ``file``: kept from ``existing`` when
    there, else ``todo`` if its digester applies to the type and ``skipped`` if it never does."""
    existing = existing or {}
    records = {}
    for digester in chain:
        applies = digester.applies_to(file)
        for output in digester.outputs:
            if output in existing:
                records[output] = existing[output]
                continue
            records[output] = OutputRecord(
                output=output,
                digester=digester.name,
                digester_version=digester.version,
                status=OutputStatus.TODO if applies else OutputStatus.SKIPPED,
                created_at=now,
                updated_at=now,
            )
    return records


def runnable(record: OutputRecord, max_attempts: int) -> bool:
    """Whether the record may be started: todo, or failed with attempts left."""
    return record.status is OutputStatus.TODO or (
        record.status is OutputStatus.FAILED and not record.is_terminal(max_attempts)
    )


def start(record: OutputRecord, version: str, now: datetime, max_attempts: int) -> OutputRecord:
    if not runnable(record, max_attempts):
        raise TransitionError(f"cannot start {record.output}: it is {record.status}")
    return replace(
        record,
        status=OutputStatus.IN_PROGRESS,
        attempts=record.attempts + 1,
        digester_version=version,
        updated_at=now,
    )


def fingerprint(files: Mapping[str, bytes]) -> str:
    """SHA-256 over the members' names and bytes: equal exactly when the content is."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def complete(
    record: OutputRecord, files: Mapping[str, bytes], content: Any, now: datetime
) -> OutputRecord:
    if record.status is not OutputStatus.IN_PROGRESS:
        raise TransitionError(f"cannot complete {record.output}: it is {record.status}")
    return replace(
        record,
        status=OutputStatus.COMPLETED,
        artifacts=tuple(sorted(files)),
        content=content,
        content_sha256=fingerprint(files),
        error="",
        retryable=True,
        updated_at=now,
    )


def fail(record: OutputRecord, error: str, retryable: bool, now: datetime) -> OutputRecord:
    if record.status is not OutputStatus.IN_PROGRESS:
        raise TransitionError(f"cannot fail {record.output}: it is {record.status}")
    return replace(
        record,
        status=OutputStatus.FAILED,
        artifacts=(),
        content=None,
        error=error,
        retryable=retryable,
        updated_at=now,
    )


def reset(record: OutputRecord, now: datetime) -> OutputRecord:
    """Back to ``todo`` with fresh attempts; ``skipped`` stays (the type did not change).
    ``content_sha256`` is kept as the fingerprint of the last content, so a producer that runs
    again can tell whether what it makes now is new."""
    if record.status is OutputStatus.SKIPPED:
        return record
    return replace(
        record,
        status=OutputStatus.TODO,
        attempts=0,
        artifacts=(),
        content=None,
        error="",
        retryable=True,
        updated_at=now,
    )
