"""The fleet follows the bucket's settings while it runs: a change reaches every worker
process within one cadence, and the results made after it name the new version."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "bucketdigest"]
CADENCE = 1.0


def _results(store: LocalStore) -> dict[str, dict]:
    """Each result's info.json, by document."""
    found = {}
    for info in store.list(keys.OUT_PREFIX):
        with zipfile.ZipFile(io.BytesIO(store.get(info.key).data)) as archive:
            found[keys.parse_out_key(info.key)] = json.loads(archive.read("info.json"))
    return found


def test_a_change_made_while_workers_run_reaches_every_one_within_one_cadence(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    change_settings(store, {"converter_mode": "legacy"})
    make_pdf(tmp_path / "before" / "a.pdf", title="Alpha", pages=1, seed=1)
    Ingestor(store).ingest([FolderSource(tmp_path / "before", FileFilter())])
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    command = [*CLI, "-v", "work", "--bucket", str(store.root), "--monitor-every", str(CADENCE)]
    workers = [subprocess.Popen(command, stderr=log.open("w")) for log in logs]
    try:
        wait_until(lambda: len(_results(store)) == 1, "the first document was never done", 120)
        changed = change_settings(store, {"keep_headers": True, "max_attempts": 4})
        assert changed.version == 2

        # every worker, idle or between jobs, takes version 2 at its next check
        following = "the bucket's settings changed: following version 2"
        wait_until(
            lambda: all(following in log.read_text() for log in logs),
            "a worker did not follow the change",
            seconds=30,
        )
        for n in range(4):
            make_pdf(tmp_path / "after" / f"b{n}.pdf", title=f"Beta {n}", pages=1, seed=10 + n)
        after = Ingestor(store).ingest([FolderSource(tmp_path / "after", FileFilter())])
        wait_until(lambda: len(_results(store)) == 5, "the later documents were never done", 180)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(timeout=120)

    results = _results(store)
    later = {f.digest for f in after.files}
    for digest, info in results.items():
        version = 2 if digest in later else 1
        assert info["provenance"]["settings_version"] == version
        assert info["provenance"]["chain_settings"]["keep_headers"] is (version == 2)
    makers = {info["provenance"]["worker_id"] for d, info in results.items() if d in later}
    assert makers, "the later documents were made by the running workers"
