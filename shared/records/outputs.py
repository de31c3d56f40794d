"""The digest chain's records of one document (``digests.json``): each output's status,
attempts and artifacts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from bucketdigest.shared.archives import check_member_name
from bucketdigest.shared.errors import UnsafeArchive
from bucketdigest.shared.keys import check_digester_name
from bucketdigest.shared.records.base import JsonRecord


class OutputStatus(StrEnum):
    """Where one output of one document stands inside its digest chain (``digests.json``),
    while the document as a whole is in one :class:`~bucketdigest.shared.queue.DocState`.
    ``skipped`` means the digester never applies to this file type; anything that goes wrong
    is ``failed`` (retried until out of attempts)."""

    TODO = "todo"
    IN_PROGRESS = "in-progress"
    COMPLETED = "completed"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class OutputRecord(JsonRecord):
    """The record of one output of one document (an entry of ``digests.json``).

    ``artifacts`` are the zip members holding the output; ``content`` is a small JSON summary
    of it (keywords, the summary's producer, a page count) and ``content_sha256`` fingerprints
    the artifacts, so a producer that runs again can tell whether its content changed.
    """

    output: str
    digester: str
    digester_version: str
    status: OutputStatus
    created_at: datetime
    updated_at: datetime
    attempts: int = 0
    artifacts: tuple[str, ...] = ()
    content: Any = None
    content_sha256: str = ""
    error: str = ""
    retryable: bool = True
    """False for errors no retry can fix (the file is not a PDF): the failure is final at once."""

    def __post_init__(self) -> None:
        # read from checkpoints and results a token may have written: its names become paths
        check_digester_name(self.digester)
        for name in self.artifacts:
            try:
                check_member_name(name)
            except UnsafeArchive as exc:
                raise ValueError(str(exc)) from None

    def is_terminal(self, max_attempts: int) -> bool:
        """Completed, skipped, or failed with no attempt left."""
        if self.status is OutputStatus.FAILED:
            return not self.retryable or self.attempts >= max_attempts
        return self.status in (OutputStatus.COMPLETED, OutputStatus.SKIPPED)


@dataclass(frozen=True)
class DigestRecords(JsonRecord):
    """``digests.json``: every output's record for one document, in chain order."""

    digest: str
    file_type: str
    outputs: tuple[OutputRecord, ...]

    def by_output(self) -> dict[str, OutputRecord]:
        return {record.output: record for record in self.outputs}
