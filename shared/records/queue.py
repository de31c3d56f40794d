"""The records a job carries through the queue: its ticket, a claim on it, its past attempts
and, when it is dead-lettered, its failure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bucketdigest.shared.keys import Priority
from bucketdigest.shared.ocr_languages import check_tesseract_names
from bucketdigest.shared.records.base import JsonRecord
from bucketdigest.shared.records.outputs import OutputRecord


class AttemptOutcome(StrEnum):
    """How an attempt that did not finish its document ended, as its ticket's history says."""

    FAILED = "failed"
    """The worker ran the job and an error stopped it."""
    LEASE_EXPIRED = "lease expired"
    """The worker was lost (killed, frozen, cut off): the monitor found its lease over."""


@dataclass(frozen=True)
class Attempt(JsonRecord):
    """One past attempt at a job: who, when, and how it ended."""

    attempt: int
    worker_id: str
    claimed_at: datetime
    ended_at: datetime
    outcome: AttemptOutcome
    error: str = ""


@dataclass(frozen=True)
class DocumentSettings(JsonRecord):
    """Chain settings one document is converted with over the bucket's: what a conversion
    request asked for it (docling-serve's ``ocr_lang`` and ``force_ocr``). None: the bucket's."""

    ocr_language: str | None = None
    """Tesseract's language(s), ``deu+eng``."""
    force_ocr: bool | None = None
    """Every page of a PDF read by OCR, its text layer left aside."""

    def __post_init__(self) -> None:
        if self.ocr_language is not None:
            check_tesseract_names(self.ocr_language)
        if self.force_ocr not in (None, True, False):
            raise ValueError(f"force_ocr is true or false, not {self.force_ocr!r}")

    def chosen(self) -> dict[str, str | bool]:
        """The settings it sets (name → value)."""
        named = {"ocr_language": self.ocr_language, "force_ocr": self.force_ocr}
        return {k: v for k, v in named.items() if v is not None}


@dataclass(frozen=True)
class Ticket(JsonRecord):
    """What every queue marker says about the job itself; it travels todo → processing → failed."""

    digest: str
    ext: str
    size: int
    names: tuple[str, ...]
    enqueued_at: datetime
    attempt: int = 1
    history: tuple[Attempt, ...] = ()
    not_before: datetime | None = None
    priority: Priority = Priority.NORMAL
    supersedes: str = ""
    """The document its path held before (the previous revision), when there was one."""
    max_attempts: int | None = None
    """Its attempt budget, fixed when it was queued (the bucket's ``max_attempts`` then), so
    the monitor and every worker agree on when it is out of attempts. None on tickets queued
    before budgets: the policy's (:meth:`RetryPolicy.budget`)."""
    settings: DocumentSettings | None = None
    """Chain settings of this document's own, over the bucket's (a conversion request's)."""
    untouched: bool = False
    """Queued by the ingest that stored its source, and never back in line since: the bucket
    holds nothing of it but its source (no result, no progress under ``work/``), so the
    worker that claims it does not look (two requests a new document). Every way back into
    ``todo`` clears it."""

    @property
    def name(self) -> str:
        """What people call the document: the first path it was ingested as, else its hash."""
        return self.names[0] if self.names else self.digest


@dataclass(frozen=True)
class Claim(JsonRecord):
    """The processing marker: who holds the job, under which token, until when."""

    ticket: Ticket
    worker_id: str
    token: str
    claimed_at: datetime
    heartbeat_at: datetime
    lease_until: datetime
    hold: bool = False
    """Held for an operation on the whole document (a purge), not claimed to run it: when its
    holder dies, the hold is dropped and the document left as it was, never requeued."""


@dataclass(frozen=True)
class Failure(JsonRecord):
    """The failed marker: the last error with its traceback, whether a retry may help, and
    the record of every output as the last attempt left them."""

    ticket: Ticket
    worker_id: str
    failed_at: datetime
    error: str
    traceback: str = ""
    retryable: bool = True
    outputs: tuple[OutputRecord, ...] = ()
