"""Least privilege for real: moto's server enforcing IAM, one user per role holding only
the policy ``bucketdigest policy`` prints, each command run with its own role's keys, and
two tenants sharing one bucket."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from boto3.s3.transfer import TransferConfig

from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import EventSecrets, change_settings
from bucketdigest.shared.errors import AccessDenied
from bucketdigest.shared.events import new_secret
from bucketdigest.shared.policy import Role
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.s3 import S3Store
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]
BUCKET = "fleet"
TENANT_A = f"s3://{BUCKET}/tenant-a"
TENANT_B = f"s3://{BUCKET}/tenant-b"
TENANT_C = f"s3://{BUCKET}/tenant-c"
"""Workers in cleanup mode (``--delete-source-when-done``), with the cleanup grants."""
Credentials = dict[str, str]


@pytest.fixture(scope="module")
def iam_endpoint() -> Iterator[str]:
    """A moto server of its own (IAM enforcement is process-wide in moto)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=1)
        except urllib.error.HTTPError:
            return True  # it answers
        except OSError:
            return False
        return True

    wait_until(answers, "moto's server did not start", seconds=30, every=0.2)
    yield endpoint
    server.terminate()
    server.wait(timeout=10)


def _user(
    iam: object, name: str, role: Role, bucket_url: str, cleanup: bool = False
) -> Credentials:
    policy = subprocess.run(
        [*CLI, "policy", "--role", role.value, "--bucket", bucket_url]
        + (["--delete-source-when-done"] if cleanup else []),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    iam.create_user(UserName=name)  # type: ignore[attr-defined]
    iam.put_user_policy(UserName=name, PolicyName="bucketdigest", PolicyDocument=policy)  # type: ignore[attr-defined]
    key = iam.create_access_key(UserName=name)["AccessKey"]  # type: ignore[attr-defined]
    return {
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
    }


@pytest.fixture(scope="module")
def users(iam_endpoint: str) -> dict[str, Credentials]:
    """Every role of tenant A, an admin of tenant B; then moto starts enforcing IAM."""
    boto3.client("s3", endpoint_url=iam_endpoint).create_bucket(Bucket=BUCKET)
    iam = boto3.client("iam", endpoint_url=iam_endpoint)
    made = {role.value: _user(iam, f"a-{role.value}", role, TENANT_A) for role in Role}
    made["b-admin"] = _user(iam, "b-admin", Role.ADMIN, TENANT_B)
    for role in (Role.INGESTOR, Role.WORKER, Role.MONITOR):
        made[f"c-{role.value}"] = _user(iam, f"c-{role.value}", role, TENANT_C, cleanup=True)
    root = boto3.client("s3", endpoint_url=iam_endpoint)
    for tenant in ("tenant-a", "tenant-c"):  # the fleet's settings, the admin's to set
        change_settings(S3Store(BUCKET, tenant, client=root), {"converter_mode": "legacy"})
    secrets = EventSecrets(new_secret())  # no endpoints: nothing is sent, the key is there
    S3Store(BUCKET, "tenant-a", client=root).put(keys.EVENTS_SECRET_KEY, secrets.to_json())
    request = urllib.request.Request(
        f"{iam_endpoint}/moto-api/reset-auth", data=b"0", headers={"Content-Type": "text/plain"}
    )
    urllib.request.urlopen(request, timeout=5)
    return made


def _run(
    endpoint: str, who: Credentials, *args: str, bucket: str = TENANT_A
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args, "--bucket", bucket, "--endpoint-url", endpoint],
        capture_output=True,
        text=True,
        env={**os.environ, **who},
        timeout=600,
    )


def _store(endpoint: str, who: Credentials, role: Role, prefix: str = "tenant-a") -> S3Store:
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=who["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=who["AWS_SECRET_ACCESS_KEY"],
    )
    return S3Store(BUCKET, prefix, client=client, role=role.value, max_attempts=1)


@pytest.mark.slow
def test_each_role_does_its_work_with_only_its_own_grant(
    iam_endpoint: str, users: dict[str, Credentials], pdf_folder: Path
) -> None:
    ingest = _run(iam_endpoint, users["ingestor"], "ingest", str(pdf_folder))
    assert ingest.returncode == 0, ingest.stderr
    work = _run(iam_endpoint, users["worker"], "work", "--exit-when-idle")
    assert work.returncode == 0, work.stderr
    assert "indexing failed" not in work.stderr
    index = _run(iam_endpoint, users["worker"], "index")
    assert index.returncode == 0, index.stderr
    monitor = _run(iam_endpoint, users["monitor"], "monitor", "--once", "--reconcile-every", "0")
    assert monitor.returncode == 0, monitor.stderr
    status = _run(iam_endpoint, users["reader"], "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["counts"]["done"] == 3
    assert json.loads(status.stdout)["index"]["documents"] == 3
    found = _run(iam_endpoint, users["reader"], "search", "rules", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)
    listed = _run(iam_endpoint, users["reader"], "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 3

    # reaching outside the grant is refused, and the error says who lacked what
    reader_ingests = _run(iam_endpoint, users["reader"], "ingest", str(pdf_folder))
    assert reader_ingests.returncode == 1
    assert "access denied to s3://fleet/tenant-a/selftest/" in reader_ingests.stderr
    assert "(role ingestor lacks s3:PutObject)" in reader_ingests.stderr
    worker = _store(iam_endpoint, users["worker"], Role.WORKER)
    raw = next(iter(worker.list(keys.RAW_PREFIX))).key
    with pytest.raises(AccessDenied, match=rf"access denied to s3://fleet/tenant-a/{raw} "
                       r"\(role worker lacks s3:DeleteObject\)"):  # fmt: skip
        worker.delete(raw)
    with pytest.raises(AccessDenied, match=r"\(role worker lacks s3:PutObject\)"):
        worker.put(keys.source_manifest_key("forged"), b"{}")
    reader = _store(iam_endpoint, users["reader"], Role.READER)
    with pytest.raises(AccessDenied, match=r"\(role reader lacks s3:PutObject\)"):
        reader.put(keys.queue_key(keys.QueueState.TODO, "0" * 64), b"{}")


@pytest.mark.slow
def test_two_tenants_in_one_bucket_cannot_read_each_other(
    iam_endpoint: str, users: dict[str, Credentials], pdf_folder: Path
) -> None:
    own = _run(iam_endpoint, users["b-admin"], "run", str(pdf_folder), bucket=TENANT_B)
    assert own.returncode == 0, own.stderr
    a_reader = _store(iam_endpoint, users["reader"], Role.READER, prefix="tenant-b")
    b_admin = _store(iam_endpoint, users["b-admin"], Role.ADMIN, prefix="tenant-b")
    result = next(iter(b_admin.list(keys.OUT_PREFIX))).key
    assert b_admin.get(result).data
    with pytest.raises(AccessDenied, match="role reader lacks s3:GetObject"):
        a_reader.get(result)
    into_a = _store(iam_endpoint, users["b-admin"], Role.ADMIN, prefix="tenant-a")
    with pytest.raises(AccessDenied, match="role admin lacks s3:PutObject"):
        into_a.put(keys.raw_key("0" * 64, "pdf"), b"%PDF-")
    with pytest.raises(AccessDenied, match="role admin lacks s3:GetObject"):
        into_a.head(keys.out_key("0" * 64))
    b_status = _run(iam_endpoint, users["b-admin"], "status", "--json", bucket=TENANT_A)
    assert b_status.returncode == 1
    assert "access denied to s3://fleet/tenant-a/" in b_status.stderr


@pytest.mark.slow
def test_in_cleanup_mode_the_monitor_puts_a_deleted_source_back_to_reprocess(
    iam_endpoint: str, users: dict[str, Credentials], pdf_folder: Path
) -> None:
    ingest = _run(iam_endpoint, users["c-ingestor"], "ingest", str(pdf_folder), bucket=TENANT_C)
    assert ingest.returncode == 0, ingest.stderr
    work = ["work", "--exit-when-idle", "--delete-source-when-done"]
    done = _run(iam_endpoint, users["c-worker"], *work, bucket=TENANT_C)
    assert done.returncode == 0, done.stderr
    monitor = _store(iam_endpoint, users["c-monitor"], Role.MONITOR, prefix="tenant-c")
    assert not list(monitor.list(keys.RAW_PREFIX)), "the worker deleted every source"
    again = _run(
        iam_endpoint, users["c-monitor"], "reprocess", "--all", "--digester", "tags",
        bucket=TENANT_C,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "requeued 3 document(s), skipped 0" in again.stdout
    assert len(list(monitor.list(keys.RAW_PREFIX))) == 3


@pytest.mark.slow
def test_only_the_roles_that_sign_read_the_events_secret(
    iam_endpoint: str, users: dict[str, Credentials]
) -> None:
    reader = _store(iam_endpoint, users["reader"], Role.READER)
    with pytest.raises(AccessDenied):
        reader.get(keys.EVENTS_SECRET_KEY)
    assert reader.get(keys.SETTINGS_KEY).data, "the settings stay readable"
    for role in (Role.WORKER, Role.MONITOR, Role.ADMIN):
        signer = _store(iam_endpoint, users[role.value], role)
        secrets = EventSecrets.from_json(signer.get(keys.EVENTS_SECRET_KEY).data)
        assert secrets.current.startswith("whsec_"), role


@pytest.mark.slow
def test_the_uploader_puts_in_the_inbox_only_and_the_monitor_takes_it_in(
    iam_endpoint: str, users: dict[str, Credentials], tmp_path: Path
) -> None:
    scan = make_pdf(tmp_path / "scan.pdf", title="Inbox scan", pages=1, seed=404)
    who = users["uploader"]
    client = boto3.client(
        "s3",
        endpoint_url=iam_endpoint,
        aws_access_key_id=who["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=who["AWS_SECRET_ACCESS_KEY"],
    )
    # what `aws s3 cp` does, in parts, as it does for a large file
    parts = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
    big = tmp_path / "big.pdf"
    big.write_bytes(scan.read_bytes() + b"%" * (11 << 20))
    client.upload_file(str(big), BUCKET, "tenant-a/inbox/2026/big.pdf", Config=parts)
    client.upload_file(str(scan), BUCKET, "tenant-a/inbox/2026/scan.pdf")
    uploader = _store(iam_endpoint, who, Role.UPLOADER)
    for attempt in (
        lambda: next(iter(uploader.list(keys.INBOX_PREFIX))),
        lambda: uploader.get(keys.inbox_key("2026/scan.pdf")),
        lambda: uploader.head(keys.SETTINGS_KEY),
        lambda: uploader.put(keys.raw_key("0" * 64, "pdf"), b"%PDF-"),
        lambda: uploader.put(keys.queue_key(keys.QueueState.TODO, "0" * 64), b"{}"),
    ):
        with pytest.raises(AccessDenied, match="role uploader lacks"):
            attempt()

    taken: list[int] = []

    def took_both() -> bool:
        """The inbox waits until an object is a couple of seconds old, so one pass may take
        the first upload and the next the second."""
        said = _run(iam_endpoint, users["monitor"], "monitor", "--once").stdout
        taken.extend(int(n) for n in re.findall(r"inbox: taken (\d+)", said))
        return sum(taken) >= 2

    wait_until(took_both, "the monitor did not take the inbox in", seconds=30, every=1)
    assert sum(taken) == 2
    monitor = _store(iam_endpoint, users["monitor"], Role.MONITOR)
    assert not list(monitor.list(keys.INBOX_PREFIX))
    for path in (scan, big):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        ticket = Ticket.from_json(monitor.get(keys.queue_key(keys.QueueState.TODO, digest)).data)
        assert ticket.names == (f"2026/{path.name}",)
    status = _run(iam_endpoint, users["reader"], "status", "--json")
    assert json.loads(status.stdout)["inbox"] == {"objects": 0, "refused": []}
