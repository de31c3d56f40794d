"""The broker lets a token's worker touch what its current claim names and nothing else."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim, Failure
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from bucketdigest.shared.tokens import add_token, revoke_token


@pytest.fixture
def bucket(tmp_path: Path) -> Iterator[tuple[Store, StoreSettings, list[str]]]:
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="brokered")
        settings = StoreSettings(bucket="s3://brokered/p")
        store = open_store(settings)
        change_settings(store, {"events": ["https://example.com/h"], "events_secret": "new"})
        for n in range(2):
            make_pdf(tmp_path / "in" / f"d{n}.pdf", title=f"D {n}", pages=1, seed=n)
        report = ingest_sources(store, [str(tmp_path / "in")], IngestSettings())
        yield store, settings, [f.digest for f in report.files]


def test_a_token_reaches_only_its_claims_objects(
    bucket: tuple[Store, StoreSettings, list[str]],
) -> None:
    store, settings, digests = bucket
    token, record = add_token(store, "volunteer")
    other_token, _ = add_token(store, "other")
    app = create_app(ServeSettings(store=settings, broker=True, allowed_hosts=("testserver",)))
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:

        def op(body: dict, who: dict = auth) -> tuple[int, dict]:
            answer = client.post("/broker/v1/op", json=body, headers=who)
            return answer.status_code, answer.json()

        # no token, a made-up one, another token's worker id
        claim = {"worker_id": record.worker_prefix + "w1", "lease_seconds": 30}
        assert client.post("/broker/v1/claim", json=claim).status_code == 401
        bad = {"Authorization": "Bearer bdw_madeup"}
        assert client.post("/broker/v1/claim", json=claim, headers=bad).status_code == 403
        wrong = {"worker_id": "t000000000000-w1", "lease_seconds": 30}
        assert client.post("/broker/v1/claim", json=wrong, headers=auth).status_code == 403

        answer = client.post("/broker/v1/claim", json=claim, headers=auth).json()
        mine = answer["job"]["claim"]["ticket"]["digest"]
        theirs = next(d for d in digests if d != mine)
        raw = keys.raw_key(mine, "pdf")

        # what the claim names: its source (read), its markers, its work folder, its result
        assert op({"op": "head", "key": raw, "claim": mine})[0] == 200
        code, listed = op({"op": "list", "key": keys.work_prefix(mine), "claim": mine})
        assert code == 200 and listed["items"] == []
        signed = client.post(
            "/broker/v1/sign",
            json={"method": "PUT", "claim": mine, "key": keys.out_key(mine), "if_none_match": True},
            headers=auth,
        ).json()
        assert "X-Amz-Signature" in signed["url"] and signed["headers"] == {"If-None-Match": "*"}
        code, read = op({"op": "get", "key": keys.SETTINGS_KEY})
        settings_seen = json.loads(base64.b64decode(read["data"]))
        assert settings_seen["events"] is None and settings_seen["events_secret"] is None

        # what it does not: another document, the queue at large, sources written, settings
        refused = [
            {"op": "head", "key": keys.raw_key(theirs, "pdf"), "claim": mine},
            {"op": "head", "key": keys.raw_key(theirs, "pdf"), "claim": theirs},
            {"op": "list", "key": "queue/todo/", "claim": mine},
            {"op": "delete", "key": raw, "claim": mine},
            {"op": "put", "key": keys.SETTINGS_KEY, "data": "e30=", "claim": mine},
            {"op": "get", "key": keys.broker_token_key("0" * 64), "claim": mine},
        ]
        for body in refused:
            assert op(body)[0] == 403, body
        other = {"Authorization": f"Bearer {other_token}"}
        assert op({"op": "head", "key": raw, "claim": mine}, other)[0] == 403

        # once the claim ends, its objects are out of reach; a revoked token is refused at once
        processing = keys.queue_key(QueueState.PROCESSING, mine)
        etag = store.head(processing).etag  # type: ignore[union-attr]
        assert op({"op": "delete", "key": processing, "etag": etag, "claim": mine})[0] == 200
        assert op({"op": "head", "key": raw, "claim": mine})[0] == 403
        revoke_token(store, "volunteer")
        again = {"worker_id": record.worker_prefix + "w2", "lease_seconds": 30}
        refused_claim = client.post("/broker/v1/claim", json=again, headers=auth)
        assert refused_claim.status_code == 403 and "revoked" in refused_claim.text


def test_a_broker_needs_a_bucket_that_presigns(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="serve --broker needs an s3:// bucket"):
        create_app(ServeSettings(store=StoreSettings(bucket=str(tmp_path)), broker=True))


def test_a_brokered_dead_letter_leaves_no_scratch_behind(
    bucket: tuple[Store, StoreSettings, list[str]],
) -> None:
    store, settings, _ = bucket
    token, record = add_token(store, "volunteer")
    app = create_app(ServeSettings(store=settings, broker=True, allowed_hosts=("testserver",)))
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        claim = {"worker_id": record.worker_prefix + "w1", "lease_seconds": 30}
        job = client.post("/broker/v1/claim", json=claim, headers=auth).json()["job"]
        mine = job["claim"]["ticket"]["digest"]

        def op(body: dict) -> dict:
            answer = client.post("/broker/v1/op", json=body | {"claim": mine}, headers=auth)
            assert answer.status_code == 200, answer.text
            return answer.json()

        scratch = keys.work_request_key(mine)
        op({"op": "put", "key": scratch, "data": base64.b64encode(b"{}").decode()})
        failure = Failure(  # its ticket no longer untouched: the job ran
            ticket=replace(Claim.from_dict(job["claim"]).ticket, untouched=False),
            worker_id=record.worker_prefix + "w1",
            failed_at=store.now(),
            error="unreadable",
        )
        op({"op": "put", "key": keys.queue_key(QueueState.FAILED, mine),
            "data": base64.b64encode(failure.to_json()).decode()})  # fmt: skip
        processing = keys.queue_key(QueueState.PROCESSING, mine)
        op({"op": "delete", "key": processing, "etag": job["etag"]})
    assert store.head(scratch) is None, "the broker cleared the dead letter's scratch"
