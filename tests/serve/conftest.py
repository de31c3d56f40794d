"""A bucket filled by real workers (done, failed and scanned documents, one with hostile text),
indexed, and an app serving it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pymupdf
import pytest
from fastapi.testclient import TestClient

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.search.indexer import index_bucket
from bucketdigest.serve.app import background_server, create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.built_once import built_once
from tests.documents import scanned_pdf
from tests.search.conftest import write_topics

TOKEN = "a-test-token-of-some-length"
HOSTILE = "<script>alert('pwned')</script> Beware the dragon's hoard"
PLACEHOLDER_TITLE = "Microsoft Word - hoard_v2.docx"
"""What the hostile PDF's metadata calls it: an authoring tool's placeholder."""


@dataclass(frozen=True)
class Served:
    settings: StoreSettings
    digests: dict[str, str]
    """Ingested path → document hash."""


def _hostile_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Hostile Manual", fontsize=24)
    page.insert_text((72, 160), HOSTILE, fontsize=11)
    doc.set_metadata({"title": PLACEHOLDER_TITLE})
    doc.save(path)
    return path


def _fill(root: Path) -> dict[str, str]:
    """The served bucket at ``root / "bucket"``: ingested path → document hash."""
    folder = root / "in"
    write_topics(folder)
    make_pdf(folder / "rulebooks/long.pdf", title="The Long Rulebook", pages=25, seed=7)
    _hostile_pdf(folder / "hostile.pdf")
    scanned_pdf(folder / "scanned.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is no PDF at all")
    store = LocalStore(root / "bucket")
    exts = EXTENSION_GROUPS["all"]
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter(exts=exts))])
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    summary = Worker(store, settings).run()
    assert summary.outcomes == {"done": 8, "failed": 1}, summary.outcomes
    index_bucket(store, StoreSettings(bucket=str(root / "bucket")))
    return {f.path: f.digest for f in report.files}


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    """Built once a run, shared by every test process: a test that changes it takes
    ``writable``."""
    root, digests = built_once(tmp_path_factory, "served", _fill)
    return Served(StoreSettings(bucket=str(root / "bucket")), digests)


@pytest.fixture
def client(served: Served) -> Iterator[TestClient]:
    """Read-only, as ``bucketdigest serve`` starts by default."""
    with TestClient(
        create_app(ServeSettings(store=served.settings, allowed_hosts=("testserver",)))
    ) as test_client:
        yield test_client


@pytest.fixture
def writable(served: Served, tmp_path: Path) -> StoreSettings:
    """A copy of the served bucket that a test may change."""
    shutil.copytree(served.settings.bucket, tmp_path / "bucket")
    return StoreSettings(bucket=str(tmp_path / "bucket"))


@pytest.fixture
def writer(writable: StoreSettings) -> Iterator[TestClient]:
    """Started with ``--allow-writes`` and TOKEN, on a copy of the bucket."""
    with TestClient(
        create_app(ServeSettings(store=writable, token=TOKEN, allowed_hosts=("testserver",)))
    ) as test_client:
        yield test_client


@dataclass(frozen=True)
class Fleet:
    """A server taking uploads (and conversions) with workers behind it."""

    url: str
    token: str
    """A bucket token that may upload."""
    folder: Path
    """A folder of the test's own, for the files it sends."""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """``serve --allow-writes`` on a bucket of its own, and a ``work`` process (two workers)
    converting what is queued, for the module's tests."""
    root = tmp_path_factory.mktemp("fleet")
    bucket = root / "bucket"
    token, _ = add_token(LocalStore(bucket), "client", (Scope.UPLOAD,))
    command = [sys.executable, "-m", "bucketdigest", "work", "--bucket", str(bucket)]
    # a job still running at the end gets --grace before it is handed back (60 s by
    # default, as long as the wait below): the module's last upload may still be converting
    worker = subprocess.Popen(
        [*command, "--workers", "2", "--grace", "5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    settings = ServeSettings(
        store=StoreSettings(bucket=str(bucket)), port=0, token="f" * 24, sync_wait=300
    )
    try:
        with background_server(settings) as url:
            yield Fleet(url, token, root)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
