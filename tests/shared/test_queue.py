"""The one transition that ends an unfinished attempt, for workers and the monitor alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from bucketdigest.shared import keys, queue
from bucketdigest.shared.attempts import RetryPolicy
from bucketdigest.shared.clock import utc_now
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import AttemptOutcome, Failure, Ticket
from bucketdigest.shared.stores.local import LocalStore

DIGEST = "ab" * 32


def _claimed(store: LocalStore, attempt: int) -> queue.Job:
    ticket = Ticket(DIGEST, "pdf", 1, ("a.pdf",), store.now(), attempt=attempt, untouched=True)
    queue.enqueue(store, ticket)
    job = queue.claim(store, DIGEST, "w1", 60).job
    assert job is not None
    return job


FAILED = AttemptOutcome.FAILED


@pytest.mark.parametrize(
    ("attempt", "end", "state"),
    [
        (1, queue.AttemptEnd(FAILED, "boom"), QueueState.TODO),
        # an output with attempts of its own left does not outlive the document's last attempt
        (2, queue.AttemptEnd(FAILED, "boom"), QueueState.FAILED),
        (
            1,
            queue.AttemptEnd(FAILED, "not a PDF", permanent=True),
            QueueState.FAILED,
        ),
        (
            1,
            queue.AttemptEnd(FAILED, "text failed for good", final=True),
            QueueState.FAILED,
        ),
    ],
)
def test_an_attempt_ends_in_todo_while_attempts_are_left_else_in_failed(
    tmp_path: Path, attempt: int, end: queue.AttemptEnd, state: QueueState
) -> None:
    store = LocalStore(tmp_path / "b")
    job = _claimed(store, attempt)
    policy = RetryPolicy(max_attempts=2, retry_delay=10)
    assert queue.end_attempt(store, job.claim, job.etag, end, policy) is state
    assert queue.state_of(store, DIGEST) == state
    data = store.get(keys.queue_key(state, DIGEST)).data
    failed = state is QueueState.FAILED
    ticket = Failure.from_json(data).ticket if failed else Ticket.from_json(data)
    assert [(a.attempt, a.outcome, a.error) for a in ticket.history] == [
        (attempt, "failed", end.error)
    ]
    assert not ticket.untouched, "the attempt may have left progress for the next one"
    if state is QueueState.TODO:
        assert ticket.attempt == attempt + 1
        assert ticket.not_before is not None


def test_an_attempt_whose_claim_was_taken_over_moves_nothing(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "b")
    job = _claimed(store, 1)
    end = queue.AttemptEnd(FAILED, "boom")
    assert queue.end_attempt(store, job.claim, '"stale"', end, RetryPolicy()) is None
    assert store.head(keys.queue_key(QueueState.PROCESSING, DIGEST)) is not None


def test_a_job_put_back_in_line_is_no_longer_untouched(tmp_path: Path) -> None:
    """The next worker then looks for the progress this one may have saved."""
    store = LocalStore(tmp_path / "b")
    job = _claimed(store, 1)
    assert job.claim.ticket.untouched
    assert queue.hand_back(store, job.claim.ticket, job.etag)
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, DIGEST)).data)
    assert (ticket.attempt, ticket.untouched) == (1, False)


@pytest.mark.parametrize(("attempt", "waits"), [(1, 100), (2, 200), (11, 86_400), (10**6, 86_400)])
def test_the_backoff_doubles_up_to_a_day_however_many_attempts_a_ticket_says(
    tmp_path: Path, attempt: int, waits: float
) -> None:
    frozen = utc_now()
    store = LocalStore(tmp_path / "b", clock=lambda: frozen)
    job = _claimed(store, attempt)
    policy = RetryPolicy(max_attempts=10**7, retry_delay=100)
    failed = queue.AttemptEnd(FAILED, "boom")
    assert queue.end_attempt(store, job.claim, job.etag, failed, policy) is QueueState.TODO
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, DIGEST)).data)
    assert ticket.not_before is not None
    assert (ticket.not_before - store.now()).total_seconds() == waits
