"""A valid worker token used as an attacker would: every request beyond what its claim needs is
refused and leaves the bucket as it was, while the transitions an honest worker makes still
go through."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.serve.guards import MAX_BODY_BYTES
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.records import Claim, Failure
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from bucketdigest.shared.tokens import add_token


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bucket(store: Store) -> dict[str, str]:
    """Every key of the bucket and its version."""
    return {info.key: info.etag for info in store.list("")}


class Attacker:
    """A client holding a valid token and one claim."""

    def __init__(self, client: TestClient, token: str, worker_prefix: str) -> None:
        self.client = client
        self.auth = {"Authorization": f"Bearer {token}"}
        body = {"worker_id": worker_prefix + "w1", "lease_seconds": 30}
        answer = client.post("/broker/v1/claim", json=body, headers=self.auth)
        assert answer.status_code == 200, answer.text
        job = answer.json()["job"]
        self.claim = Claim.from_dict(job["claim"])
        self.etag: str = job["etag"]
        self.digest = self.claim.ticket.digest

    def op(self, **body: Any) -> tuple[int, dict]:
        answer = self.client.post(
            "/broker/v1/op", json={"claim": self.digest} | body, headers=self.auth
        )
        assert answer.headers["content-type"].startswith("application/json"), answer.text
        return answer.status_code, answer.json()

    def sign(self, **body: Any) -> int:
        answer = self.client.post(
            "/broker/v1/sign", json={"claim": self.digest} | body, headers=self.auth
        )
        return answer.status_code


@pytest.fixture
def broker(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> Iterator[tuple[Store, Attacker, TestClient]]:
    """The real broker on a bucket of moto's HTTP server, a token and one claim."""
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    store = open_store(settings)
    change_settings(
        store, {"events": ["https://example.com/h"], "events_secret": "new", "lease_seconds": 60}
    )
    for n in range(2):
        make_pdf(tmp_path / "in" / f"d{n}.pdf", title=f"D {n}", pages=1, seed=n)
    ingest_sources(store, [str(tmp_path / "in")], IngestSettings())
    token, record = add_token(store, "volunteer")
    app = create_app(ServeSettings(store=settings, broker=True, allowed_hosts=("testserver",)))
    with TestClient(app) as client:
        yield store, Attacker(client, token, record.worker_prefix), client


def test_every_request_beyond_the_claim_is_refused_and_the_bucket_is_unchanged(
    broker: tuple[Store, Attacker, TestClient],
) -> None:
    store, attacker, _ = broker
    mine, held = attacker.digest, attacker.claim
    processing = keys.queue_key(QueueState.PROCESSING, mine)
    now = store.now()
    renewed = replace(held, heartbeat_at=now, lease_until=now + timedelta(seconds=30))
    ticket = held.ticket
    before = _bucket(store)

    forged = {
        "an attempt of its choosing": replace(
            renewed, ticket=replace(ticket, attempt=1, max_attempts=999)
        ),
        "a lease of 30 days": replace(renewed, lease_until=now + timedelta(days=30)),
        "another document's result to read": replace(
            renewed, ticket=replace(ticket, supersedes="b" * 64)
        ),
        "a new claimant": replace(renewed, worker_id="someone-else"),
    }
    for why, claim in forged.items():
        code, answer = attacker.op(
            op="put_if_match", key=processing, data=_b64(claim.to_json()), etag=attacker.etag
        )
        assert code == 422 and "refused" in answer["detail"], why

    high = keys.queue_key(QueueState.TODO, mine, Priority.HIGH)
    code, _ = attacker.op(op="put_if_absent", key=high, data=_b64(ticket.to_json()))
    assert code == 422, "a ticket in the high lane's key (lane bypass)"
    renamed = replace(ticket, names=("invoice-from-the-ceo.pdf",), untouched=False)
    todo = keys.queue_key(QueueState.TODO, mine, ticket.priority)
    assert ticket.untouched, "queued by the ingest that stored it"
    code, answer = attacker.op(op="put_if_absent", key=todo, data=_b64(ticket.to_json()))
    assert code == 422 and "untouched" in answer["detail"], "progress hidden from the next worker"
    assert attacker.op(op="put_if_absent", key=todo, data=_b64(renamed.to_json()))[0] == 422
    lying = Failure(
        ticket=renamed, worker_id=held.worker_id, failed_at=now, error="<script>alert(1)</script>"
    )
    failed = keys.queue_key(QueueState.FAILED, mine)
    assert attacker.op(op="put", key=failed, data=_b64(lying.to_json()))[0] == 422
    assert attacker.op(op="put", key=processing, data=_b64(renewed.to_json()))[0] == 403
    assert attacker.op(op="delete", key=processing)[0] == 422, "a claim dropped without its etag"

    # the result: never deleted, never written unconditionally
    assert attacker.op(op="delete", key=keys.out_key(mine))[0] == 403
    assert attacker.op(op="put", key=keys.out_key(mine), data=_b64(b"junk"))[0] == 403
    assert attacker.sign(method="PUT", key=keys.out_key(mine)) == 422

    # the secrets and the settings as stored are not presigned nor read
    assert attacker.sign(method="GET", key=keys.SETTINGS_KEY) == 403
    assert attacker.sign(method="GET", key=keys.EVENTS_SECRET_KEY) == 403
    assert attacker.op(op="get", key=keys.EVENTS_SECRET_KEY)[0] == 403
    code, read = attacker.op(op="get", key=keys.SETTINGS_KEY)
    assert code == 200 and "whsec_" not in base64.b64decode(read["data"]).decode()

    # keys that are no keys, and data that is not base64: refused with JSON
    work = keys.work_prefix(mine)
    for key in (
        f"{work}../../settings.json",
        f"{work}a\x00b",
        f"{work}{'x' * 1100}",
        f"{work}a//b",
    ):
        code, answer = attacker.op(op="put", key=key, data=_b64(b"x"))
        assert code == 400 and "unsafe key" in answer["detail"], key
    code, answer = attacker.op(op="put", key=f"{work}note", data="not base64!")
    assert code == 422 and "base64" in answer["detail"]

    assert _bucket(store) == before, "a refused request changed the bucket"


def test_the_transitions_an_honest_worker_needs_still_go_through(
    broker: tuple[Store, Attacker, TestClient],
) -> None:
    store, worker, _ = broker
    held, processing = worker.claim, keys.queue_key(QueueState.PROCESSING, worker.digest)
    now = store.now()
    renewed = replace(held, heartbeat_at=now, lease_until=now + timedelta(seconds=30))
    code, answer = worker.op(
        op="put_if_match", key=processing, data=_b64(renewed.to_json()), etag=worker.etag
    )
    assert code == 200, answer
    code, _ = worker.op(op="put", key=keys.work_request_key(worker.digest), data=_b64(b"{}"))
    assert code == 200, "its checkpoints"
    todo = keys.queue_key(QueueState.TODO, worker.digest, held.ticket.priority)
    back = replace(held.ticket, untouched=False)
    assert worker.op(op="put_if_absent", key=todo, data=_b64(back.to_json()))[0] == 200
    assert worker.op(op="delete", key=processing, etag=answer["etag"])[0] == 200
    assert store.head(todo) is not None and store.head(processing) is None, "handed back"


def test_limits_hold_before_any_work(broker: tuple[Store, Attacker, TestClient]) -> None:
    _, attacker, client = broker
    long_lease = {"worker_id": attacker.claim.worker_id + "x", "lease_seconds": 3600}
    answer = client.post("/broker/v1/claim", json=long_lease, headers=attacker.auth)
    assert answer.status_code == 422 and "lease_seconds" in answer.text
    huge = b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}"
    answer = client.post(
        "/broker/v1/op", content=huge, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY_BYTES // (1 << 20) + 2):
            yield b" " * (1 << 20)

    answer = client.post("/broker/v1/op", content=chunks(), headers=attacker.auth)
    assert answer.status_code == 413, "a body without Content-Length is counted as it comes"
    assert json.loads(answer.text)["detail"].startswith("a request body is at most")


def test_a_token_holds_no_more_claims_than_its_workers(tmp_path: Path) -> None:
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="limited")
        settings = StoreSettings(bucket="s3://limited/p")
        store = open_store(settings)
        for n in range(4):
            make_pdf(tmp_path / "in" / f"d{n}.pdf", title=f"D {n}", pages=1, seed=n)
        ingest_sources(store, [str(tmp_path / "in")], IngestSettings())
        token, record = add_token(store, "small", workers=2)
        app = create_app(ServeSettings(store=settings, broker=True, allowed_hosts=("testserver",)))
        auth = {"Authorization": f"Bearer {token}"}
        with TestClient(app) as client:

            def claim(n: int) -> dict:
                body = {"worker_id": f"{record.worker_prefix}w{n}", "lease_seconds": 30}
                return client.post("/broker/v1/claim", json=body, headers=auth).json()

            first, second, third = claim(1), claim(2), claim(3)
            assert first["job"] and second["job"]
            assert third["job"] is None and "holds its 2 claims" in third["refused"]
            # a claim that ended without the broker seeing it (the monitor requeued it) is
            # not counted once it is gone
            digest = first["job"]["claim"]["ticket"]["digest"]
            store.delete(keys.queue_key(QueueState.PROCESSING, digest))
            assert claim(4)["job"] is not None
