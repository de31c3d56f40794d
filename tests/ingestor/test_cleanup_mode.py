"""Cleanup mode: a worker deletes each source once its result is written; retry and
reprocess fetch it again from the folder or repository it was ingested from, or say why not."""

from __future__ import annotations

import shutil
from pathlib import Path

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.runner.rerun import reprocess_documents
from bucketdigest.shared import keys
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.ingestor.conftest import LfsRemote


def _work(store: Store) -> None:
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        idle_sleep=0.1,
        delete_source_when_done=True,
        digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
    )
    summary = Worker(store, settings).run()
    assert set(summary.outcomes) == {"done"}, summary.outcomes


def _has_source(store: Store, digest: str) -> bool:
    return any(True for _ in store.list(keys.raw_prefix(digest)))


def test_sources_go_when_done_and_come_back_from_their_folder_to_run_again(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    report = ingest_sources(store, [str(pdf_folder)], IngestSettings())
    digests = {f.path: f.digest for f in report.files}
    _work(store)
    assert not any(_has_source(store, d) for d in digests.values())
    assert all(store.head(keys.out_key(d)) is not None for d in digests.values())

    make_pdf(pdf_folder / "beta.pdf", title="Beta rules, changed", pages=1, seed=7)
    (pdf_folder / "sub" / "gamma.pdf").unlink()
    cache = tmp_path / "git-cache"
    again = reprocess_documents(store, sorted(digests.values()), "tags", False, cache)
    assert list(again.requeued) == [digests["alpha.pdf"]]
    assert _has_source(store, digests["alpha.pdf"])
    assert "beta.pdf holds other content now" in again.skipped[digests["beta.pdf"]]
    assert "gamma.pdf is not there any more" in again.skipped[digests["sub/gamma.pdf"]]
    assert again.skipped[digests["beta.pdf"]].startswith("its source is not in the store")
    _work(store)
    assert not _has_source(store, digests["alpha.pdf"])


def test_a_source_comes_back_from_its_git_lfs_repository(
    tmp_path: Path, lfs_remote: LfsRemote
) -> None:
    store = LocalStore(tmp_path / "bucket")
    cache = tmp_path / "git-cache"
    settings = IngestSettings(cache_dir=cache)
    report = ingest_sources(store, [lfs_remote.url], settings)
    digest = next(f.digest for f in report.files if f.path == "docs/Core Rules.pdf")
    _work(store)
    assert not _has_source(store, digest)
    shutil.rmtree(cache)  # a fresh machine: nothing cached
    again = reprocess_documents(store, [digest], "tags", False, cache)
    assert list(again.requeued) == [digest], again.skipped
    assert _has_source(store, digest)


def test_the_web_api_fetches_a_deleted_source_again_before_reprocessing(
    tmp_path: Path, pdf_folder: Path
) -> None:
    from fastapi.testclient import TestClient

    from bucketdigest.serve.app import create_app
    from bucketdigest.serve.backend import ServeSettings
    from bucketdigest.shared.config import StoreSettings

    store = LocalStore(tmp_path / "bucket")
    report = ingest_sources(store, [str(pdf_folder)], IngestSettings())
    digests = {f.path: f.digest for f in report.files}
    _work(store)
    token = "a-token-long-enough-for-the-server"
    settings = ServeSettings(
        store=StoreSettings(bucket=str(store.root)), token=token, allowed_hosts=("testserver",)
    )
    auth = {"Authorization": f"Bearer {token}"}
    (pdf_folder / "sub" / "gamma.pdf").unlink()
    with TestClient(create_app(settings)) as client:
        kept = client.post(f"/api/documents/{digests['alpha.pdf']}/reprocess", headers=auth)
        assert kept.status_code == 200 and kept.json()["digesters"]
        assert _has_source(store, digests["alpha.pdf"])
        gone = client.post(f"/api/documents/{digests['sub/gamma.pdf']}/reprocess", headers=auth)
        assert gone.status_code == 409
        assert "cannot be fetched again" in gone.json()["detail"]
    _work(store)
    assert store.head(keys.out_key(digests["alpha.pdf"])) is not None
