"""A result's image links resolve whatever folder the worker runs from."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from bucketdigest.shared.result_links import broken_links, internal_links
from bucketdigest.shared.samples import make_pdf

CLI = [sys.executable, "-m", "bucketdigest.cli.main"]


@pytest.mark.parametrize("cwd", ["/", tempfile.gettempdir()], ids=["root", "tmp"])
def test_image_links_name_members_of_the_zip_wherever_the_worker_runs(
    tmp_path: Path, cwd: str
) -> None:
    make_pdf(tmp_path / "in" / "book.pdf", title="Linked Images", pages=2, seed=5)
    bucket = tmp_path / "bucket"
    done = subprocess.run(
        [*CLI, "run", str(tmp_path / "in"), "--bucket", str(bucket)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (result,) = (bucket / "store" / "out").glob("*.zip")
    with zipfile.ZipFile(result) as archive:
        page = archive.read("pages/0001.md").decode()
        document = archive.read("document.md").decode()
        assert broken_links(archive) == []
    assert [t for t in internal_links(page) if t.startswith("../images/")], page
    assert [t for t in internal_links(document) if t.startswith("images/")], document
    assert "bucketdigest-job" not in page + document
