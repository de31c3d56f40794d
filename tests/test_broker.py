"""Workers without bucket credentials: a broker on moto's server, three token workers and one
credentialed worker convert a corpus together; one token is revoked mid-run. Every document
ends done once, none is lost, and the revoked worker's requests are refused."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import httpx
import pytest

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Claim
from bucketdigest.shared.samples import make_samples
from bucketdigest.shared.store import Store
from bucketdigest.shared.tokens import add_token, revoke_token
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "bucketdigest"]
DOCUMENTS = 12


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _held_by(store: Store, prefix: str) -> str | None:
    for info in store.list(QueueState.PROCESSING.prefix):
        try:
            claim = Claim.from_json(store.get(info.key).data)
        except Exception:
            continue
        if claim.worker_id.startswith(prefix):
            return claim.ticket.digest
    return None


def _without_credentials() -> dict[str, str]:
    """The environment of a machine that has no bucket credentials at all."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "AWS_ACCESS_KEY_ID": "none",
        "AWS_SECRET_ACCESS_KEY": "none",
    }


def test_token_workers_and_a_credentialed_one_share_the_queue_and_a_revoked_one_is_refused(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    store = open_store(settings)
    change_settings(store, {"converter_mode": "legacy", "lease_seconds": 4})
    make_samples(tmp_path / "pdfs", DOCUMENTS, pages=4)
    ingested = ingest_sources(store, [str(tmp_path / "pdfs")], IngestSettings())
    expected = {f.digest for f in ingested.files}
    tokens = {name: add_token(store, name) for name in ("anna", "ben", "cleo")}

    port = _free_port()
    target = ["--bucket", moto_bucket, "--endpoint-url", moto_endpoint]
    broker = subprocess.Popen(
        [*CLI, "serve", *target, "--broker", "--port", str(port), "--processes", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    logs = {name: tmp_path / f"{name}.log" for name in (*tokens, "credentialed")}
    workers: dict[str, subprocess.Popen[str]] = {}
    try:

        def up() -> bool:
            assert broker.poll() is None, broker.stderr.read() if broker.stderr else ""
            try:
                return httpx.get(f"{url}/api/healthz").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, "the broker did not start", every=0.3)
        workers["credentialed"] = subprocess.Popen(
            [*CLI, "-v", "work", *target, "--monitor-every", "1"],
            stderr=logs["credentialed"].open("w"),
            stdout=subprocess.DEVNULL,
            text=True,
        )
        # the credentialed worker (the only one yet) is at work before the others start
        wait_until(lambda: _held_by(store, ""), "the credentialed worker never claimed", 120)
        for name, (token, _) in tokens.items():
            workers[name] = subprocess.Popen(
                [*CLI, "-v", "work", "--via", url, "--token", token, "--exit-when-idle"],
                stderr=logs[name].open("w"),
                stdout=subprocess.DEVNULL,
                env=_without_credentials(),
                text=True,
            )

        # revoke ben's token while ben holds a claim
        revoked_token, revoked = tokens["ben"]
        held = wait_until(
            lambda: _held_by(store, revoked.worker_prefix), "ben never held a claim", 120, 0.05
        )
        revoke_token(store, "ben")
        refused = httpx.post(
            f"{url}/broker/v1/claim",
            json={"worker_id": revoked.worker_prefix + "x", "lease_seconds": 10},
            headers={"Authorization": f"Bearer {revoked_token}"},
        )
        assert refused.status_code == 403 and "revoked" in refused.text

        def all_done() -> bool:
            return {keys.parse_out_key(i.key) for i in store.list(keys.OUT_PREFIX)} == expected

        wait_until(all_done, "the fleet did not finish the corpus", 400, 0.5)
        for name in tokens:
            assert workers[name].wait(timeout=120) == 0, logs[name].read_text()[-2000:]
    finally:
        for process in [*workers.values(), broker]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in [*workers.values(), broker]:
            process.wait(timeout=120)

    # every document done once, none lost, nothing left in line
    assert list(store.list(keys.QUEUE_PREFIX)) == []
    makers: Counter[str] = Counter()
    for digest in expected:
        with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data)) as archive:
            info = json.loads(archive.read("info.json"))
            assert "Rulebook" in archive.read("document.md").decode()
        maker = info["provenance"]["worker_id"]
        makers[
            next(
                (n for n, (_, r) in tokens.items() if maker.startswith(r.worker_prefix)),
                "credentialed",
            )
        ] += 1
    assert makers["anna"] and makers["cleo"] and makers["credentialed"], makers

    # the revoked worker's requests were refused, and its job was finished by another
    ben = logs["ben"].read_text()
    assert "this token is unknown, revoked" in ben
    assert not _names_worker(store, held, revoked.worker_prefix)


def _names_worker(store: Store, digest: str, prefix: str) -> bool:
    """Whether ``digest``'s result was made by a worker of ``prefix``."""
    with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data)) as archive:
        return json.loads(archive.read("info.json"))["provenance"]["worker_id"].startswith(prefix)
