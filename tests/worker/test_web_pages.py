"""HTML pages: their main content as Markdown (headings, links, tables; no navigation or
footer), their title and URL in info.json, searchable like any text; a file that is not a
page fails with the reason."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys, queue
from bucketdigest.shared.filetypes import EXTENSION_GROUPS, FileKind, file_type
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from bucketdigest.worker.pagetext import page_member

PAGE = """<!doctype html>
<html><head><title>Errata | Example Games</title>
<link rel="canonical" href="https://example.org/rules/errata"></head>
<body><nav><a href="/">Home</a> | <a href="/shop">Shop our dice</a></nav>
<main><h1>Errata for the Core Rules</h1>
<p>The corrections below apply to the <a href="https://example.org/core">first printing</a>.
Each of them replaces the text given in the book, page by page.</p>
<h2>Combat</h2>
<p>Initiative is rolled once per round, not once per turn, and ties go to the defender.</p>
<table><tr><th>Page</th><th>Change</th></tr>
<tr><td>12</td><td>The pit is ten feet deep</td></tr>
<tr><td>48</td><td>Shields give a bonus of two</td></tr></table>
</main><footer>Copyright 2026 Example Games. Subscribe to our newsletter.</footer></body></html>
"""


def test_an_html_page_becomes_markdown_of_its_main_content(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "errata.html").write_text(PAGE)
    (folder / "logo.htm").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    assert file_type("html").kind is FileKind.WEB and "htm" in EXTENSION_GROUPS["web"]
    store = LocalStore(tmp_path / "bucket")
    report = Ingestor(store).ingest(
        [FolderSource(folder, FileFilter(exts=EXTENSION_GROUPS["web"]))]
    )
    digests = {f.path: f.digest for f in report.files}
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    assert Worker(store, settings).run().outcomes == {"done": 1, "failed": 1}

    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digests["errata.html"])).data))
    page = archive.read(page_member(1)).decode()
    assert "# Errata for the Core Rules" in page and "## Combat" in page
    assert "[first printing](https://example.org/core)" in page
    assert "| 12 | The pit is ten feet deep |" in page
    assert "Shop our dice" not in page and "newsletter" not in page
    info = json.loads(archive.read("info.json"))
    assert info["metadata"]["url"] == "https://example.org/rules/errata"
    assert "Errata" in info["metadata"]["title"]
    statuses = {
        r["output"]: r["status"] for r in json.loads(archive.read("digests.json"))["outputs"]
    }
    assert statuses["embeddings"] == "completed" and statuses["thumbnail"] == "skipped"

    failure = queue.read_failure(store, digests["logo.htm"])
    assert failure is not None and "not an HTML page: it holds binary data" in failure.error
