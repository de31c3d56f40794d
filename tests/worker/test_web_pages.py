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
from bucketdigest.shared.result import page_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

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


SPHINX = b"""<!doctype html><html><head><meta charset="utf-8">
<title>dataclasses \xe2\x80\x94 Data Classes</title>
<link rel="canonical" href="https://docs.example.org/lib/dataclasses.html"></head><body>
<div role="main"><section id="top">
<h1><a class="reference internal" href="#top"><code>dataclasses</code></a> \xe2\x80\x94 Data Classes
<a class="headerlink" href="#top" title="Link to this heading">\xc2\xb6</a></h1>
<p>This module provides a decorator and functions for adding generated special methods such as
<code>__init__()</code> to user-defined classes, as
<a href="pep-557.html">PEP 557</a> describes.</p>
<h2>Module contents<a class="headerlink" href="#contents">#</a></h2>
<p>The fields are defined with type annotations; the example below shows how in practice.</p>
<div class="highlight"><pre><span class="nd">@dataclass</span>
<span class="k">class</span> <span class="nc">Item</span>:
    <span class="n">name</span>: str

    <span class="k">def</span> <span class="nf">cost</span>(self) -&gt; float:
        return 1
</pre></div>
</section></div></body></html>
"""
CODE = "@dataclass\nclass Item:\n    name: str\n\n    def cost(self) -> float:\n        return 1"


def test_a_documentation_page_loses_its_header_anchors_and_keeps_code_byte_for_byte() -> None:
    from bucketdigest.shared.result_links import internal_links
    from bucketdigest.worker.digesters.doc_to_markdown.web import html_to_markdown

    markdown, metadata = html_to_markdown(SPHINX)
    assert markdown.startswith("# `dataclasses` — Data Classes\n")
    assert "## Module contents\n" in markdown
    assert "¶" not in markdown and "#top" not in markdown
    assert metadata["title"] == "dataclasses — Data Classes"
    assert f"```\n{CODE}\n```" in markdown
    assert "[PEP 557](https://docs.example.org/lib/pep-557.html)" in markdown
    assert internal_links(markdown) == []
    without_base, _ = html_to_markdown(SPHINX.replace(b'rel="canonical"', b'rel="x"'))
    assert "PEP 557 describes" in without_base and internal_links(without_base) == []
