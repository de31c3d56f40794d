"""Purging while real worker processes run on moto's server: nothing live is lost, nothing
removed is left behind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.monitor.purge import PurgeRule, purge
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.samples import make_samples
from bucketdigest.shared.store import Store

CLI = [sys.executable, "-m", "bucketdigest"]
NOW = PurgeRule(older_than=timedelta(0))


def _keys_of(store: Store, digest: str) -> list[str]:
    prefixes = (
        keys.raw_prefix(digest),
        keys.out_key(digest),
        keys.registry_doc_prefix(digest),
        keys.work_prefix(digest),
        *(keys.queue_key(state, digest) for state in keys.QueueState),
    )
    return [info.key for prefix in prefixes for info in store.list(prefix)]


@pytest.mark.slow
def test_purge_while_workers_run_keeps_every_live_document_and_removes_the_rest(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str
) -> None:
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    store = open_store(settings)
    folder = tmp_path / "pdfs"
    pdfs = make_samples(folder, 12, pages=2)
    change_settings(store, {"converter_mode": "legacy"})
    first = ingest_sources(store, [str(folder)], IngestSettings())
    digest_of = {f.path: f.digest for f in first.files}
    workers = [
        subprocess.Popen(
            [
                *CLI,
                "work",
                "--bucket",
                moto_bucket,
                "--endpoint-url",
                moto_endpoint,
                "--exit-when-idle",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    removed = [p.relative_to(folder).as_posix() for p in pdfs[:6]]
    parked = tmp_path / "parked"
    parked.mkdir()
    for name in removed:
        shutil.move(folder / name, parked / name)
    ingest_sources(store, [str(folder)], IngestSettings())
    readded = removed[0]
    shutil.move(parked / readded, folder / readded)
    ingest_sources(store, [str(folder)], IngestSettings())  # back before any purge
    kept_reasons: set[str] = set()
    while any(worker.poll() is None for worker in workers):
        run = purge(store, NOW)
        kept_reasons |= {k.reason for k in run.kept}
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
    purge(store, NOW)

    live = [p.relative_to(folder).as_posix() for p in folder.rglob("*.pdf")]
    assert sorted(live) == sorted([readded, *(p.relative_to(folder).as_posix() for p in pdfs[6:])])
    for name in live:
        assert store.head(keys.out_key(digest_of[name])) is not None, name
    for name in removed[1:]:
        assert _keys_of(store, digest_of[name]) == [], name
    assert list(store.list(keys.QUEUE_PREFIX)) == []
    assert kept_reasons <= {"queued", "being processed"}
