"""Crawling a web site (``ingest URL --site``) against a generated site on 127.0.0.1: what
is taken and what is not, the errors and their reasons, a second crawl (changed pages become
new revisions, unchanged ones cost a 304, recent errors wait), and a crawl killed mid-way
resuming without fetching again what it had stored."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bucketdigest.ingestor.crawl import CrawlSettings
from bucketdigest.ingestor.ingest import IngestReport, IngestSettings, ingest_sources
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.shared import keys, queue
from bucketdigest.shared.fetch import FetchSettings
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import SiteCrawlState, Ticket
from bucketdigest.shared.result import page_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.ingestor.site_server import GeneratedSite, serve_site
from tests.waiting import wait_until

STORED = {
    "",
    "orphan.html",
    "a.html",
    "b.html",
    "moved.html",
    "guide.pdf",
    "news.html",
    "hang.html",
    "deep/c.html",
    "deep/deeper/d.html",
}


@pytest.fixture
def site() -> Iterator[GeneratedSite]:
    with serve_site() as served:
        yield served


def _settings(**crawl: object) -> IngestSettings:
    defaults: dict[str, object] = {
        "rate": 1000.0,
        "fetch": FetchSettings(timeout=1.0, private_networks=True),
    }
    return IngestSettings(
        file_filter=FileFilter(exts=frozenset({"pdf"})),
        crawl=CrawlSettings(**{**defaults, **crawl}),  # type: ignore[arg-type]
    )


def _crawl(store: LocalStore, site: GeneratedSite, **crawl: object) -> IngestReport:
    return ingest_sources(store, [site.docs], _settings(**crawl))


def _names(report: IngestReport, site: GeneratedSite) -> set[str]:
    return {f.path.removeprefix(site.docs) for f in report.files}


def test_a_site_crawl_stores_its_pages_and_names_every_error(
    site: GeneratedSite, tmp_path: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    report = _crawl(store, site)

    assert _names(report, site) == STORED
    reasons = {e.path.removeprefix(site.docs): e.reason for e in report.run.errors}
    assert set(reasons) == {
        "missing.html",
        "boom.html",
        "slow.html",
        "away.html",
        "private/secret.html",
    }
    assert "HTTP 404" in reasons["missing.html"]
    assert "HTTP 500" in reasons["boom.html"]
    assert "timed out" in reasons["slow.html"]
    assert "redirected outside the site" in reasons["away.html"]
    assert "robots.txt" in reasons["private/secret.html"]
    assert site.hits["/docs/private/secret.html"] == 0
    for outside in ("/outside.html", "/docs/style.css"):
        assert site.hits[outside] == 0
    assert all(n == 1 for path, n in site.hits.items() if path != "/robots.txt")

    (counts,) = report.run.crawls
    assert (counts.discovered, counts.fetched, counts.errors) == (15, 10, 5)
    assert counts.completed and counts.bytes > len(site.pdf)
    assert report.run.queued == 10
    pdf = next(f for f in report.files if f.path.endswith("guide.pdf"))
    assert store.get(keys.raw_key(pdf.digest, "pdf")).data == site.pdf
    page = next(f for f in report.files if f.path == site.docs + "a.html")
    assert b"<h1>Alpha</h1>" in store.get(keys.raw_key(page.digest, "html")).data
    state = SiteCrawlState.from_json(store.get(keys.crawl_state_key(site.docs)).data)
    moved = next(u for u in state.urls if u.url.endswith("moved.html"))
    assert moved.final_url == site.docs + "target.html"
    assert not list(store.list(keys.crawl_log_prefix(site.docs)))


def test_depth_page_and_glob_limits_bound_the_crawl(site: GeneratedSite, tmp_path: Path) -> None:
    shallow = _crawl(LocalStore(tmp_path / "one"), site, max_depth=1)
    assert "deep/c.html" not in _names(shallow, site)
    assert "a.html" in _names(shallow, site)

    few = _crawl(LocalStore(tmp_path / "two"), site, max_pages=3)
    assert few.run.crawls[0].discovered == 3

    settings = _settings()
    settings = IngestSettings(
        file_filter=FileFilter(exts=frozenset({"pdf"}), exclude=("*/deep/*", "*.pdf")),
        crawl=settings.crawl,
    )
    globbed = ingest_sources(LocalStore(tmp_path / "three"), [site.docs], settings)
    assert not {"deep/c.html", "guide.pdf"} & _names(globbed, site)


def test_a_second_crawl_asks_for_changes_and_lets_recent_errors_wait(
    site: GeneratedSite, tmp_path: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    first = _crawl(store, site)
    old_news = next(f.digest for f in first.files if f.path.endswith("news.html"))
    site.news_edition = 2

    second = _crawl(store, site, retry_errors_after=timedelta(hours=1))

    (counts,) = second.run.crawls
    assert counts.fetched == 10 and counts.unchanged == 9
    assert site.not_modified["/docs/a.html"] == 1
    assert second.run.queued == 1
    news = next(f for f in second.files if f.path.endswith("news.html"))
    assert news.digest != old_news
    marker = store.get(keys.queue_key(QueueState.TODO, news.digest)).data
    assert Ticket.from_json(marker).supersedes == old_news
    assert site.hits["/docs/boom.html"] == 1  # its error is recent: not asked again
    assert any(e.path.endswith("boom.html") and "HTTP 500" in e.reason for e in second.run.errors)

    _crawl(store, site, retry_errors_after=timedelta(0))
    assert site.hits["/docs/boom.html"] == 2
    assert queue.state_of(store, old_news) is DocState.TODO


def test_a_crawl_killed_midway_resumes_without_fetching_again(
    site: GeneratedSite, tmp_path: Path
) -> None:
    bucket = tmp_path / "bucket"
    site.released.clear()  # hang.html, the last link of the index, waits
    command = [
        sys.executable, "-m", "bucketdigest", "ingest", site.docs, "--site",
        "--bucket", str(bucket), "--rate", "1000", "--concurrency", "1", "--timeout", "30",
    ]  # fmt: skip
    crawler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: site.hits["/docs/hang.html"], "the crawler never asked for the page")
        assert site.hits["/docs/hang.html"] == 1
    finally:
        os.kill(crawler.pid, signal.SIGKILL)
        crawler.wait()
    before = dict(site.hits)
    store = LocalStore(bucket)
    assert list(store.list(keys.crawl_log_prefix(site.docs)))
    site.released.set()

    report = _crawl(store, site)

    (counts,) = report.run.crawls
    assert counts.completed and counts.resumed >= 7
    assert _names(report, site) == STORED
    assert site.hits["/docs/a.html"] == before["/docs/a.html"] == 1
    again = {p for p, n in site.hits.items() if n > before.get(p, 0)}
    assert again <= {
        "/robots.txt",
        "/docs/hang.html",
        "/docs/deep/c.html",
        "/docs/deep/deeper/d.html",
    }
    assert "/docs/hang.html" in again
    assert report.run.queued == 10


def test_a_crawled_page_is_digested_with_its_url(site: GeneratedSite, tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    (page,) = _crawl(store, site, max_pages=1).files
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    assert Worker(store, settings).run().outcomes == {"done": 1}

    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(page.digest)).data))
    info = json.loads(archive.read("info.json"))
    assert info["metadata"]["url"] == site.docs and info["names"] == [site.docs]
    assert "Index is a page of the generated test site" in archive.read(page_member(1)).decode()
