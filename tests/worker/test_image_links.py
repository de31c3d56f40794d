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

CLI = [sys.executable, "-m", "bucketdigest"]


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


def test_printed_text_that_reads_as_a_link_stays_text(tmp_path: Path) -> None:
    """A LaTeX manual prints ``\\setkomainfont[<basename>](<Regular>)``: in Markdown that is a
    link to nothing, so the reader would get a dead link and lose the brackets."""
    import pymupdf

    printed = r"\setkomainfont[<basename>](<Regular>)(<Bold>) sets the Korean font."
    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 100), "Font commands", fontsize=18)
    page.insert_text((72, 140), printed, fontsize=11)
    page.insert_text(
        (72, 160), "The same holds for \\setkosansfont[A](B) and \\setkomainfont( A )[]( B )."
    )
    (tmp_path / "in").mkdir()
    document.save(tmp_path / "in" / "fonts.pdf")
    bucket = tmp_path / "bucket"
    done = subprocess.run(
        [*CLI, "run", str(tmp_path / "in"), "--bucket", str(bucket)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (result,) = (bucket / "store" / "out").glob("*.zip")
    with zipfile.ZipFile(result) as archive:
        assert broken_links(archive) == []
        chunks = archive.read("chunks.jsonl").decode()
    assert "[<basename>](<Regular>)" in chunks.replace("\\\\", "\\")
