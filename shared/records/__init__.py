"""The JSON markers and records kept in the bucket, as frozen dataclasses, by concept: the
queue's (:mod:`.queue`), the digest chain's (:mod:`.outputs`), the registry's
(:mod:`.registry`), crawls' (:mod:`.crawls`) and runs' (:mod:`.runs`); how each becomes JSON
a person can read (:mod:`.base`). Every record is importable from here."""

from bucketdigest.shared.records.base import SCHEMA_VERSION, JsonRecord
from bucketdigest.shared.records.crawls import (
    CrawlCounts,
    CrawlLogEntry,
    CrawlUrl,
    SiteCrawlState,
    UrlState,
)
from bucketdigest.shared.records.outputs import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.records.queue import (
    Attempt,
    AttemptOutcome,
    Claim,
    DocumentSettings,
    Failure,
    Ticket,
)
from bucketdigest.shared.records.registry import (
    FileError,
    InboxRefusal,
    ManifestPath,
    RemovedPath,
    SourceManifest,
    SourceRecord,
)
from bucketdigest.shared.records.runs import (
    DamageCheck,
    IndexerLease,
    IndexGeneration,
    IngestRun,
    PurgeRun,
    PurgeSkip,
    SweepCursor,
    WorkerNote,
)

__all__ = [
    "SCHEMA_VERSION",
    "Attempt",
    "AttemptOutcome",
    "Claim",
    "CrawlCounts",
    "CrawlLogEntry",
    "CrawlUrl",
    "DamageCheck",
    "DigestRecords",
    "DocumentSettings",
    "Failure",
    "FileError",
    "InboxRefusal",
    "IndexGeneration",
    "IndexerLease",
    "IngestRun",
    "JsonRecord",
    "ManifestPath",
    "OutputRecord",
    "OutputStatus",
    "PurgeRun",
    "PurgeSkip",
    "RemovedPath",
    "SiteCrawlState",
    "SourceManifest",
    "SourceRecord",
    "SweepCursor",
    "Ticket",
    "UrlState",
    "WorkerNote",
]
