"""What is in the bucket: counts per state, recent failures, latest ingest runs. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from bucketdigest.shared import keys
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Failure, IngestRun
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


def read_failure(store: Store, digest: str) -> Failure | None:
    try:
        return Failure.from_json(store.get(keys.queue_key(QueueState.FAILED, digest)).data)
    except NotFound:
        return None


def collect_status(store: Store, *, failures: int = 10, runs: int = 5) -> Status:
    """Count every state and read the most recent failures and ingest runs."""
    counts = {state.value: 0 for state in QueueState}
    failed = []
    for state in QueueState:
        for info in store.list(state.prefix):
            counts[state.value] += 1
            if state is QueueState.FAILED:
                failed.append(info)
    counts["done"] = sum(1 for _ in store.list(keys.OUT_PREFIX))
    status = Status(counts={k: counts[k] for k in ("todo", "processing", "failed", "done")})
    for info in sorted(failed, key=lambda i: i.last_modified, reverse=True)[:failures]:
        _, digest = keys.parse_queue_key(info.key)
        failure = read_failure(store, digest)
        if failure is not None:
            status.failures.append(
                FailureSummary(
                    digest=digest,
                    name=failure.ticket.names[0] if failure.ticket.names else "",
                    attempt=failure.ticket.attempt,
                    error=failure.error,
                    failed_at=failure.failed_at.isoformat(),
                )
            )
    run_keys = sorted((i.key for i in store.list(keys.REGISTRY_RUNS_PREFIX)), reverse=True)
    for key in run_keys[:runs]:
        status.runs.append(IngestRun.from_json(store.get(key).data))
    return status
