"""The digest chain inside real jobs: records in the zip, outputs retried across attempts,
file types with their own digest sets, and reprocessing."""

from __future__ import annotations

import io
import json
import socket
import zipfile
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.repair import reconcile
from bucketdigest.shared import keys
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters import digester_named
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings
from bucketdigest.worker.reprocess import reprocess


def _settings(**digest: object) -> WorkerSettings:
    options = DigestSettings(converter=ConverterOptions(mode="legacy"), **digest)
    return WorkerSettings(
        exit_when_idle=True, monitor_every=None, idle_sleep=0.1, retry_delay=0, digest=options
    )


def _ingest(store: LocalStore, folder: Path) -> dict[str, str]:
    exts = EXTENSION_GROUPS["all"]
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter(exts=exts))])
    return {f.path: f.digest for f in report.files}


def _members(store: LocalStore, digest: str) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
    return {name: archive.read(name) for name in archive.namelist()}


def _statuses(members: dict[str, bytes]) -> dict[str, str]:
    return {r["output"]: r["status"] for r in json.loads(members["digests.json"])["outputs"]}


def test_each_file_type_gets_its_own_set_of_outputs(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    make_pdf(folder / "rules.pdf", title="Rules", pages=2, seed=1)
    (folder / "notes.txt").write_text("Bring snacks to the game night. Dice are provided.\n")
    store = LocalStore(tmp_path / "bucket")
    digests = _ingest(store, folder)
    summary = Worker(store, _settings()).run()
    assert summary.outcomes == {"done": 2}
    pdf = _members(store, digests["rules.pdf"])
    assert set(_statuses(pdf).values()) == {"completed", "skipped"}
    assert _statuses(pdf)["web-page"] == "skipped"  # only link files fetch a page
    assert {"thumbnail.png", "tags.json", "summary.md", "chunks.jsonl", "embeddings.npy"} <= set(
        pdf
    )
    text = _members(store, digests["notes.txt"])
    assert _statuses(text) == {
        "markdown": "completed",
        "thumbnail": "skipped",
        "ocr": "skipped",
        "web-page": "completed",  # a text file that is not a lone URL: nothing to fetch
        "tags": "completed",
        "summary": "completed",
        "chunks": "completed",
        "embeddings": "completed",
    }
    assert "snacks" in text["document.md"].decode()
    info = json.loads(pdf["info.json"])
    assert info["outputs"]["markdown"] == "completed" and info["pages"] == 2
    assert list(store.list(keys.WORK_PREFIX)) == []
    assert list(store.list("queue/")) == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_failing_service_is_retried_per_output_then_recorded_as_failed(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    make_pdf(folder / "rules.pdf", title="Rules", pages=1, seed=2)
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, folder)["rules.pdf"]
    down = {"llm_url": f"http://127.0.0.1:{_closed_port()}/v1", "llm_model": "m"}
    summary = Worker(store, _settings(**down, endpoint_timeout=2, endpoint_attempts=1)).run()
    assert summary.outcomes == {"retrying": 2, "done": 1}
    members = _members(store, digest)
    records = {r["output"]: r for r in json.loads(members["digests.json"])["outputs"]}
    assert records["summary"]["status"] == "failed" and records["summary"]["attempts"] == 3
    assert "cannot reach" in records["summary"]["error"]
    assert records["markdown"]["attempts"] == 1  # completed once, kept across the retries
    assert records["tags"]["status"] == "completed"
    info = json.loads(members["info.json"])
    assert any(p.startswith("summary failed:") for p in info["problems"])


def test_an_unreadable_document_is_dead_lettered_with_every_record(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "fake.pdf").write_bytes(b"this is not a PDF at all")
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, folder)["fake.pdf"]
    Worker(store, _settings()).run()
    failure = json.loads(store.get(keys.queue_key(keys.QueueState.FAILED, digest)).data)
    records = {r["output"]: r for r in failure["outputs"]}
    assert records["markdown"]["status"] == "failed" and not records["markdown"]["retryable"]
    assert "not a readable PDF" in failure["error"]
    assert list(store.list(keys.work_prefix(digest))) == []


def test_reprocessing_one_digester_leaves_every_other_output_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    make_pdf(folder / "rules.pdf", title="Rules", pages=2, seed=3)
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, folder)["rules.pdf"]
    Worker(store, _settings()).run()
    before = _members(store, digest)

    report = reprocess(store, [digest], "tags", outdated=False)
    assert report.requeued == {digest: ["tags"]}
    assert reconcile(store).cleaned == []  # the request survives the consistency sweep
    summary = Worker(store, _settings()).run()
    assert summary.outcomes == {"done": 1}
    after = _members(store, digest)
    stamped = {"digests.json", "info.json", "tags.json"}
    assert {n: d for n, d in after.items() if n not in stamped} == {
        n: d for n, d in before.items() if n not in stamped
    }
    records = {r["output"]: r for r in json.loads(after["digests.json"])["outputs"]}
    old = {r["output"]: r for r in json.loads(before["digests.json"])["outputs"]}
    assert records["tags"]["updated_at"] != old["tags"]["updated_at"]
    assert records["markdown"] == old["markdown"]
    assert list(store.list(keys.WORK_PREFIX)) == [] and list(store.list("queue/")) == []

    assert reprocess(store, [digest], None, outdated=True).skipped == {digest: "up to date"}
    monkeypatch.setattr(type(digester_named("summary")), "version", "2")
    assert reprocess(store, [digest], None, outdated=True).requeued == {digest: ["summary"]}
