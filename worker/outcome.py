"""How a job a worker held ended, as reported to logs, progress bars and summaries."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    """How a job this worker held ended."""

    DONE = "done"
    ALREADY_DONE = "already-done"
    RETRYING = "retrying"
    FAILED = "failed"
    ABANDONED = "abandoned"
    HANDED_BACK = "handed-back"

    @property
    def ends_document(self) -> bool:
        """Whether the document's fate is settled (a retry or a hand-back is not)."""
        return self in (Outcome.DONE, Outcome.ALREADY_DONE, Outcome.FAILED)


@dataclass(frozen=True)
class JobResult:
    """What happened to one job."""

    digest: str
    name: str
    outcome: Outcome
    pages: int = 0
    error: str = ""
    seconds: float = 0.0
