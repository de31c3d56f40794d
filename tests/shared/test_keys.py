from __future__ import annotations

from pathlib import Path

import pytest

from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.policy import CLAIM_REQUESTS, GRANTS, Role, grants_table, iam_policy

H = "ab" * 32


def test_every_key_builder_round_trips_through_its_parser() -> None:
    assert keys.parse_raw_key(keys.raw_key(H, ".PDF")) == (H, "pdf")
    assert keys.raw_key(H, "pdf").startswith(keys.raw_prefix(H))
    assert keys.parse_out_key(keys.out_key(H)) == H
    for state in QueueState:
        assert keys.parse_queue_key(keys.queue_key(state, H)) == (state, H)
    assert keys.parse_registry_doc_key(keys.registry_doc_key(H, "0123456789abcdef")) == (
        H,
        "0123456789abcdef",
    )


def test_keys_have_the_documented_layout() -> None:
    assert keys.raw_key(H, "pdf") == f"store/raw/{H}.pdf"
    assert keys.out_key(H) == f"store/out/{H}.zip"
    assert keys.queue_key(QueueState.TODO, H) == f"queue/todo/{H}"
    assert keys.queue_key(QueueState.PROCESSING, H) == f"queue/processing/{H}"
    assert keys.queue_key(QueueState.FAILED, H) == f"queue/failed/{H}"


@pytest.mark.parametrize("bad", ["", "AB" * 32, "ab" * 31, "../" + "a" * 61])
def test_builders_refuse_anything_but_a_lowercase_sha256(bad: str) -> None:
    with pytest.raises(ValueError):
        keys.out_key(bad)


def test_parsers_refuse_foreign_keys() -> None:
    with pytest.raises(ValueError):
        keys.parse_queue_key("queue/elsewhere/" + H)
    with pytest.raises(ValueError):
        keys.parse_out_key(f"store/out/{H}.tar")


def test_the_protocol_document_shows_every_roles_grant() -> None:
    protocol = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
    assert grants_table() in protocol.read_text()


@pytest.mark.parametrize("role", list(Role))
def test_a_policy_is_confined_to_its_prefix(role: Role) -> None:
    document = iam_policy(role, "s3://shared-bucket/tenant-a/")
    objects = document["Statement"]
    if role is not Role.UPLOADER:  # it lists nothing
        listing = objects.pop(0)
        assert listing["Condition"] == {"StringLike": {"s3:prefix": ["tenant-a/*"]}}
    assert all(s["Action"] != ["s3:ListBucket"] for s in objects)
    resources = [r for statement in objects for r in statement["Resource"]]
    assert resources
    assert all(r.startswith("arn:aws:s3:::shared-bucket/tenant-a/") for r in resources)
    deletes = next((s["Resource"] for s in objects if s["Sid"] == "Delete"), [])
    raw = "arn:aws:s3:::shared-bucket/tenant-a/store/raw/x.pdf"
    assert any(raw.startswith(r.rstrip("*")) for r in deletes) == (role is Role.ADMIN)


def test_what_the_broker_lets_a_claim_do_the_worker_role_is_granted() -> None:
    worker = GRANTS[Role.WORKER]
    granted = {
        "get": worker.read, "head": worker.read, "list": worker.read, "put": worker.write,
        "put_if_absent": worker.write, "put_if_match": worker.write, "delete": worker.delete,
        "delete_many": worker.delete,
    }  # fmt: skip
    for prefix, requests in CLAIM_REQUESTS.items():
        for request in requests:
            assert any(prefix.startswith(g) for g in granted[request]), (prefix, request)
    assert not any(keys.SECRETS_PREFIX.startswith(p) for p in GRANTS[Role.READER].read)
