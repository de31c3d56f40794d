"""What is in the bucket: counts per state, recent failures, latest ingest runs. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from bucketdigest.shared import keys, queue
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import IngestRun
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


def collect_status(store: Store, *, failures: int = 10, runs: int = 5) -> Status:
    """Count every state and read the most recent failures and ingest runs."""
    counts = dict.fromkeys(DocState, 0)
    failed = []
    for state in QueueState:
        for digest, info in queue.markers(store, state):
            counts[DocState(state.value)] += 1
            if state is QueueState.FAILED:
                failed.append((info.last_modified, digest))
    counts[DocState.DONE] = sum(1 for _ in store.list(keys.OUT_PREFIX))
    status = Status(counts={state.value: n for state, n in counts.items()})
    for _, digest in sorted(failed, reverse=True)[:failures]:
        failure = queue.read_failure(store, digest)
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
