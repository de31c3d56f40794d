"""Store requests by operation: ingest and processing of new documents, and re-ingesting a
Git LFS repository whose documents are all done."""

from __future__ import annotations

import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from common import moto_server, new_bucket, table

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.opening import open_sources
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.samples import make_samples
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.s3 import S3Store
from bucketdigest.worker.loop import Worker, WorkerSettings

OPS = ("LIST", "GET", "HEAD", "PUT", "DELETE")


def _row(phase: str, counts: Counter[str], documents: int) -> tuple[str, ...]:
    total = sum(counts.values())
    return (phase, *(f"{counts[op] / documents:.2f}" for op in OPS), f"{total / documents:.2f}")


def _lfs_repository(root: Path, files: int) -> str:
    bare, work = root / "remote.git", root / "work"
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(
        ["git", "clone", "-q", bare.as_uri(), str(work)], check=True, capture_output=True
    )
    subprocess.run([*git, "lfs", "install", "--local"], cwd=work, check=True, capture_output=True)
    subprocess.run([*git, "lfs", "track", "*.pdf"], cwd=work, check=True, capture_output=True)
    for index in range(files):
        (work / f"doc-{index:05d}.pdf").write_bytes(f"%PDF-1.7 bench document {index}\n".encode())
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "docs"], cwd=work, check=True)
    subprocess.run(
        [*git, "push", "-q", "origin", "main"], cwd=work, check=True, capture_output=True
    )
    return bare.as_uri()


def run(quick: bool) -> str:
    documents = 4 if quick else 20
    lfs_files = 20 if quick else 1000
    with tempfile.TemporaryDirectory() as scratch, moto_server() as endpoint:
        root = Path(scratch)
        store = CountingStore(S3Store(new_bucket(endpoint), "bench", endpoint_url=endpoint))
        make_samples(root / "pdfs", documents, pages=1)
        Ingestor(store).ingest([FolderSource(root / "pdfs", FileFilter())])
        ingest = Counter(store.requests)
        store.requests.clear()
        # the options a user gets by default (full chain, layout mode), without the monitor
        # duty, which is a fleet-wide cost rather than a per-document one
        settings = WorkerSettings(exit_when_idle=True, monitor_every=None)
        Worker(store, settings).run()
        processing = Counter(store.requests)
        rows = [
            _row("ingest (new documents)", ingest, documents),
            _row("processing (claim to release)", processing, documents),
            _row("total", ingest + processing, documents),
        ]
        url = _lfs_repository(root / "lfs", lfs_files)
        sources, errors = open_sources([url], FileFilter(), ref="HEAD", cache_dir=root / "cache")
        Ingestor(store).ingest(sources, errors)
        for info in list(store.list(QueueState.TODO.prefix)):
            digest = keys.parse_queue_key(info.key)[1]
            store.put(keys.out_key(digest), b"done")
        store.requests.clear()
        sources, errors = open_sources([url], FileFilter(), ref="HEAD", cache_dir=root / "cache")
        again = Ingestor(store).ingest(sources, errors).run
        rows.append(
            _row(f"re-ingest, {lfs_files} LFS files all done (per file)", store.requests, lfs_files)
        )
    note = (
        f"New documents: {documents} one-page PDFs ingested from a folder, then processed by one "
        f"worker with the default options (full digest chain, layout mode; no heartbeat fell in "
        f"the run, no checkpoint was due). Re-ingest: {again.bytes_downloaded} content bytes "
        f"downloaded, {again.already_done} of {again.discovered} files already done.\n\n"
    )
    return note + table(("phase, per document", *OPS, "total"), rows)
