"""Link files (.url, .webloc, a text file holding one URL): the page they point to is fetched
from a local web server (an intranet, once the bucket allows private networks), its main
content feeds search; a dead link fails with its HTTP status after its attempts; robots.txt is
honoured; a link file with no URL fails at once; by default a link to an address off the public
internet fails at once, unfetched."""

from __future__ import annotations

import functools
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.result import web_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

ARTICLE = """<html><head><title>Grappling rules</title></head><body>
<nav>Home | Forum | Shop</nav><article><h1>Grappling, clarified</h1>
<p>A grappled creature can still cast spells with verbal components, but it cannot move away
from the grappler unless it wins a contested strength check at the start of its turn.</p>
</article><footer>All rights reserved</footer></body></html>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


class _Served(_Quiet):
    asked: list[str]

    def do_GET(self) -> None:
        self.asked.append(self.path)
        super().do_GET()


@pytest.fixture
def asked() -> list[str]:
    """The paths the site was asked for."""
    return []


@pytest.fixture
def site(tmp_path: Path, asked: list[str]) -> Iterator[str]:
    root = tmp_path / "www"
    (root / "private").mkdir(parents=True)
    (root / "grappling.html").write_text(ARTICLE)
    (root / "private" / "notes.html").write_text(ARTICLE)
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    handler = type("Handler", (_Served,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_link_files_fetch_their_page_and_dead_links_fail_with_the_status(
    tmp_path: Path, site: str
) -> None:
    folder = tmp_path / "links"
    folder.mkdir()
    (folder / "grappling.url").write_text(f"[InternetShortcut]\r\nURL={site}/grappling.html\r\n")
    (folder / "gone.webloc").write_text(
        '<?xml version="1.0"?><plist version="1.0"><dict><key>URL</key>'
        f"<string>{site}/missing.html</string></dict></plist>"
    )
    (folder / "private.md").write_text(f"  {site}/private/notes.html\n")
    (folder / "empty.url").write_text("[InternetShortcut]\r\n")
    store = LocalStore(tmp_path / "bucket")
    change_settings(store, {"fetch_private_networks": True})  # the site stands for an intranet
    exts = EXTENSION_GROUPS["links"] | {"md"}
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter(exts=exts))])
    digests = {f.path: f.digest for f in report.files}
    settings = WorkerSettings(
        exit_when_idle=True, monitor_every=None, idle_sleep=0.1, retry_delay=0
    )
    Worker(store, settings).run()

    def result(name: str) -> tuple[zipfile.ZipFile, dict[str, dict]]:
        archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digests[name])).data))
        records = json.loads(archive.read("digests.json"))["outputs"]
        return archive, {r["output"]: r for r in records}

    archive, records = result("grappling.url")
    assert records["web-page"]["status"] == "completed"
    page = archive.read(web_member(1)).decode()
    assert "cannot move away" in page and "Shop" not in page
    assert b"<article>" in archive.read("web/0001.html")
    chunks = archive.read("chunks.jsonl").decode()
    assert "contested strength check" in chunks  # the page's text is searchable
    assert "contested strength check" in archive.read("document.md").decode()
    settings_for_serve = ServeSettings(
        store=StoreSettings(bucket=str(store.root)), allowed_hosts=("testserver",)
    )
    with TestClient(create_app(settings_for_serve)) as client:
        shown = client.get(f"/api/documents/{digests['grappling.url']}/markdown?page=1").text
    assert "grappling.html" in shown and "contested strength check" in shown

    archive, records = result("gone.webloc")
    gone = records["web-page"]
    assert gone["status"] == "failed" and gone["attempts"] == 3
    assert "HTTP 404" in gone["error"] and "missing.html" in gone["error"]
    assert "web-page failed: HTTP 404" in " ".join(
        json.loads(archive.read("info.json"))["problems"]
    )

    _, records = result("private.md")
    assert records["web-page"]["status"] == "failed"
    assert "robots.txt" in records["web-page"]["error"]

    failure = queue.read_failure(store, digests["empty.url"])
    assert failure is not None and failure.error == "no URL in this .url file"


def test_a_link_off_the_public_internet_fails_at_once_unfetched(
    tmp_path: Path, site: str, asked: list[str]
) -> None:
    """A link file anyone could upload must not make a worker read what only the fleet's
    machines reach (a cloud's metadata service, the store, this machine's services)."""
    folder = tmp_path / "links"
    folder.mkdir()
    (folder / "inside.url").write_text(f"[InternetShortcut]\r\nURL={site}/grappling.html\r\n")
    store = LocalStore(tmp_path / "bucket")
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter(exts={"url"}))])
    settings = WorkerSettings(
        exit_when_idle=True, monitor_every=None, idle_sleep=0.1, retry_delay=0
    )
    Worker(store, settings).run()

    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(report.files[0].digest)).data))
    records = {r["output"]: r for r in json.loads(archive.read("digests.json"))["outputs"]}
    refused = records["web-page"]
    assert refused["status"] == "failed" and refused["attempts"] == 1
    assert "127.0.0.1" in refused["error"] and "fetch_private_networks" in refused["error"]
    assert asked == []  # neither the page nor its robots.txt
    assert "cannot move away" not in archive.read("document.md").decode()
