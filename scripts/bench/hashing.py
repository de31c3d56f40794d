"""Ingest hashing speed against sha256sum on the same files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from common import table, timed

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared.stores.local import LocalStore


def run(quick: bool) -> str:
    files, size = (2, 1 << 20) if quick else (16, 32 << 20)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "files").mkdir()
        for index in range(files):
            (root / "files" / f"f{index:02d}.pdf").write_bytes(os.urandom(size))
        names = sorted(str(p) for p in (root / "files").iterdir())
        megabytes = files * size / (1 << 20)
        timed(["cat", *names], stdout=None)
        reference = min(timed(["sha256sum", *names]) for _ in range(3))
        store = LocalStore(root / "bucket")
        source = [FolderSource(root / "files", FileFilter())]
        first = Ingestor(store).ingest(source)
        again = Ingestor(store).ingest(source)
        first_s = (first.run.finished_at - first.run.started_at).total_seconds()
        again_s = (again.run.finished_at - again.run.started_at).total_seconds()
    rows = [
        ("sha256sum", f"{megabytes / reference:.0f}", "1.00"),
        (
            "re-ingest (hash, already queued)",
            f"{megabytes / again_s:.0f}",
            f"{reference / again_s:.2f}",
        ),
        (
            "first ingest (hash + upload to the local store)",
            f"{megabytes / first_s:.0f}",
            f"{reference / first_s:.2f}",
        ),
    ]
    note = f"{files} files of {size >> 20} MiB ({megabytes:.0f} MiB), page cache warm.\n\n"
    return note + table(("what", "MB/s", "ratio to sha256sum"), rows)
