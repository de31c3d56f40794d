from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from bucketdigest.shared.errors import CorruptRecord
from bucketdigest.shared.records import Attempt, Claim, Failure, Ticket

NOW = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)


def _ticket() -> Ticket:
    attempt = Attempt(1, "host-1-a", NOW, NOW + timedelta(seconds=3), "failed", "boom")
    return Ticket("cd" * 32, "pdf", 10, ("rules/a.pdf",), NOW, attempt=2, history=(attempt,))


def test_nested_records_survive_a_json_round_trip() -> None:
    claim = Claim(_ticket(), "host-2-b", "tok", NOW, NOW, NOW + timedelta(minutes=5))
    assert Claim.from_json(claim.to_json()) == claim
    failure = Failure(_ticket(), "host-2-b", NOW, "bad", "trace", retryable=False)
    assert Failure.from_json(failure.to_json()) == failure


def test_markers_are_readable_json_with_a_schema_version() -> None:
    data = json.loads(_ticket().to_json())
    assert data["schema_version"] == 1
    assert data["enqueued_at"] == "2026-11-25T12:00:00.123456Z"
    assert data["history"][0]["error"] == "boom"


def test_unknown_fields_from_newer_writers_are_ignored() -> None:
    data = json.loads(_ticket().to_json())
    data["added_later"] = 1
    assert Ticket.from_json(json.dumps(data).encode()) == _ticket()


@pytest.mark.parametrize("raw", [b"", b"not json", b"{}", b'{"digest": 1}', b"[]"])
def test_a_corrupt_marker_raises_a_clear_error(raw: bytes) -> None:
    with pytest.raises(CorruptRecord, match="Ticket"):
        Ticket.from_json(raw)
