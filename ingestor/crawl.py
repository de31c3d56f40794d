"""Crawling a web site into the bucket (phase 1 of ``ingest URL --site``; phase 2 is the
normal queue).

Pages are found from the start URL, the site's sitemaps and the links of the pages fetched
(breadth first, within the crawl's scope), fetched politely (robots.txt, a per-host rate,
a few at a time, conditional requests), and each is stored as ``store/raw/<hash>.<ext>``
before its state turns ``fetched`` in the crawl's log (:mod:`crawl_state`). So a crawl that
dies resumes where it was: URLs it left ``pending`` are fetched, those it had stored are not
fetched again. A new crawl after one that went to the end starts over from the start URL and
sitemaps, asking for each known page only if it changed; URLs that failed are tried again
once their error is older than ``retry_errors_after``.
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import timedelta

from bucketdigest.ingestor.crawl_links import page_links, read_sitemap
from bucketdigest.ingestor.crawl_scope import CrawlScope, normalize_url, site_prefix, url_ext
from bucketdigest.ingestor.crawl_state import CrawlJournal
from bucketdigest.ingestor.sources import Candidate
from bucketdigest.shared import keys
from bucketdigest.shared.errors import DigestError, NotFound, SourceError
from bucketdigest.shared.fetch import FetchedPage, FetchSettings, HostThrottle, Robots, fetch
from bucketdigest.shared.filetypes import SUPPORTED_EXTENSIONS, FileKind, ext_of_mime, file_type
from bucketdigest.shared.records import CrawlCounts, CrawlUrl, FileError, UrlState
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

_MAX_SITEMAPS = 50


@dataclass(frozen=True)
class CrawlSettings:
    """How far and how fast a site is crawled."""

    max_pages: int | None = 10_000
    """URLs taken in all (the start URL and sitemaps' first, then in the order found)."""
    max_depth: int | None = None
    """Links followed from the start URL (sitemap pages count as depth 1)."""
    rate: float = 2.0
    """Requests a second to one host (robots.txt's Crawl-delay, when longer, wins)."""
    concurrency: int = 4
    retry_errors_after: timedelta = timedelta(hours=6)
    fetch: FetchSettings = field(default_factory=FetchSettings)


def _content_ext(page: FetchedPage) -> str | None:
    """What the page is stored as: by its Content-Type, else by its URL's extension."""
    ext = ext_of_mime(page.content_type)
    if ext is None and url_ext(page.final_url) in SUPPORTED_EXTENSIONS:
        ext = url_ext(page.final_url)
    return ext


class SiteCrawl:
    """One crawl of the site whose start URL is ``site``."""

    def __init__(self, store: Store, site: str, scope: CrawlScope, settings: CrawlSettings) -> None:
        self.store = store
        self.site = site
        self.scope = scope
        self.settings = settings
        self.journal = CrawlJournal(store, site, keys.new_run_id(store.now()))
        self.robots = Robots(settings.fetch)
        self.throttle = HostThrottle(settings.rate)
        self.counts = CrawlCounts(site=site)
        self._frontier: deque[str] = deque()
        self._taken: set[str] = set()
        """URLs of this crawl cycle (the crawl under way, or the one it resumes)."""
        self._reported: list[FileError | Candidate] = []
        """Settled without a fetch, not yet handed out."""

    def _count(self, **more: int) -> None:
        self.counts = replace(
            self.counts, **{name: getattr(self.counts, name) + n for name, n in more.items()}
        )

    def _in_cycle(self, record: CrawlUrl) -> bool:
        done_at = self.journal.completed_at
        return record.state is UrlState.PENDING or done_at is None or record.updated_at > done_at

    def _error_is_fresh(self, record: CrawlUrl) -> bool:
        return self.store.now() - record.updated_at < self.settings.retry_errors_after

    def _pending(self, url: str, depth: int, found_on: str) -> CrawlUrl | None:
        """A pending record for a URL newly found, if the crawl takes it (keeping what is
        known of an earlier fetch, for a conditional request); a URL whose error is recent is
        reported as such instead, and tried again once it is old enough."""
        if url in self._taken or not self.scope.takes(url, depth):
            return None
        if self.scope.max_pages is not None and len(self._taken) >= self.scope.max_pages:
            return None
        self._taken.add(url)
        self._count(discovered=1)
        before = self.journal.urls.get(url)
        now = self.store.now()
        if before is not None and before.state is UrlState.ERROR and self._error_is_fresh(before):
            self._reported.append(self._kept_error(before))
            return None
        if before is None:
            return CrawlUrl(url, UrlState.PENDING, depth, now, found_on=found_on)
        return replace(before, state=UrlState.PENDING, depth=depth, updated_at=now, error="")

    def _sitemap_urls(self) -> list[str]:
        """The page URLs of the site's sitemaps (robots.txt's, else ``/sitemap.xml``)."""
        start = normalize_url(self.site)
        todo = deque(self.robots.sitemaps(start) or [f"{site_prefix(start)}sitemap.xml"])
        pages: list[str] = []
        for _ in range(_MAX_SITEMAPS):
            if not todo:
                break
            try:
                sitemap = fetch(todo.popleft(), self.settings.fetch, self.robots)
            except DigestError as exc:
                log.info("%s: no sitemap: %s", self.site, exc)
                continue
            found, more = read_sitemap(sitemap.body)
            pages += found
            todo.extend(more)
        return pages

    def _start(self) -> None:
        """Take up the crawl that died, or start a new one."""
        self.journal.load()
        ongoing = [r for r in self.journal.urls.values() if self._in_cycle(r)]
        if ongoing:
            log.info("%s: resuming the crawl that stopped (%d URLs)", self.site, len(ongoing))
            for record in sorted(ongoing, key=lambda r: (r.depth, r.updated_at)):
                self._taken.add(record.url)
                self._count(discovered=1)
                self._resume(record)
            return
        found = [(normalize_url(self.site), 0, "start")]
        found += [(normalize_url(url), 1, "sitemap") for url in self._sitemap_urls()]
        records = [r for url, depth, on in found if (r := self._pending(url, depth, on))]
        self.journal.record(records)
        self._frontier.extend(r.url for r in records)

    def _resume(self, record: CrawlUrl) -> None:
        if record.state is UrlState.FETCHED:
            self._count(resumed=1)
            self._reported.append(self._candidate(record))
        elif record.state is UrlState.ERROR and self._error_is_fresh(record):
            self._reported.append(self._kept_error(record))
        else:
            self._frontier.append(record.url)

    def _kept_error(self, record: CrawlUrl) -> FileError:
        self._count(errors=1)
        return FileError(
            path=record.url,
            reason=f"{record.error} (at {record.updated_at:%Y-%m-%d %H:%M} UTC; tried again "
            "once older than the crawl's --retry-errors-after)",
        )

    def _candidate(self, record: CrawlUrl) -> Candidate:
        def gone() -> Candidate:
            raise SourceError(
                f"{record.url}: the page fetched earlier is no longer in the bucket; the next "
                "crawl fetches it again"
            )

        return Candidate(
            source=self.site,
            relative=record.url,
            materialize=gone,  # type: ignore[arg-type]
            digest=record.digest,
            size=record.size,
            content_ext=record.ext,
        )

    def _fetch(self, url: str, before: CrawlUrl) -> FetchedPage:
        """In a pool thread: wait for the host's turn, then GET (conditionally, when an
        earlier crawl stored the page)."""
        if self.settings.fetch.respect_robots and not self.robots.allows(url):
            return fetch(url, self.settings.fetch, self.robots)  # raises, naming robots.txt
        self.throttle.wait(url, self.robots.crawl_delay(url))
        page = fetch(
            url,
            self.settings.fetch,
            self.robots,
            etag=before.etag if before.digest else "",
            last_modified=before.last_modified if before.digest else "",
        )
        if page.status == 304:
            try:  # the links are those of the copy in the bucket
                body = self.store.get(keys.raw_key(before.digest, before.ext)).data
            except NotFound:
                return fetch(url, self.settings.fetch, self.robots)
            return replace(page, body=body)
        return page

    def _settle(self, url: str, outcome: Future[FetchedPage]) -> FileError | Candidate:
        """Store a fetched page and record it with the URLs found on it, or record the error."""
        record = self.journal.urls[url]
        now = self.store.now()
        try:
            page = outcome.result()
            unchanged = page.status == 304
            ext = record.ext if unchanged else self._check(page)
        except DigestError as exc:
            error = replace(record, state=UrlState.ERROR, updated_at=now, error=str(exc))
            self.journal.record([error])
            self._count(errors=1)
            return FileError(path=url, reason=str(exc))

        # the page's bytes into the store (unless unchanged), and its record
        digest = record.digest if unchanged else hashlib.sha256(page.body).hexdigest()
        if not unchanged:
            self.store.put_if_absent(keys.raw_key(digest, ext), page.body)
            self._count(bytes=len(page.body), unchanged=int(digest == record.digest))
        else:
            self._count(unchanged=1)
        self._count(fetched=1)
        final = normalize_url(page.final_url)
        fetched = replace(
            record,
            state=UrlState.FETCHED,
            updated_at=now,
            digest=digest,
            ext=ext,
            size=len(page.body),
            final_url="" if final == url else final,
            etag=page.etag,
            last_modified=page.last_modified,
            error="",
        )

        # the site's pages it links to, into the frontier
        found = []
        if file_type(ext).kind is FileKind.WEB:
            for link in page_links(page.body, page.final_url):
                if pending := self._pending(normalize_url(link), record.depth + 1, url):
                    found.append(pending)
        self.journal.record([fetched, *found])
        self._frontier.extend(r.url for r in found)
        return self._candidate(fetched)

    def _check(self, page: FetchedPage) -> str:
        """The extension to store the page under; DigestError if the crawl does not take it."""
        final = normalize_url(page.final_url)
        if not final.startswith(self.scope.prefix):
            raise DigestError(f"redirected outside the site, to {final}")
        ext = _content_ext(page)
        if ext is None or not self.scope.takes_type(ext):
            raise DigestError(f"not a page or file type taken (Content-Type {page.content_type})")
        return ext

    def run(self) -> Iterator[FileError | Candidate]:
        """Crawl; every page stored (or kept from the crawl resumed) as a candidate with its
        digest, every URL that could not be fetched as an error naming it."""
        self._start()
        in_flight: dict[Future[FetchedPage], str] = {}
        with ThreadPoolExecutor(self.settings.concurrency, "crawl") as pool:
            try:
                while self._frontier or in_flight or self._reported:
                    yield from self._reported
                    self._reported.clear()
                    while self._frontier and len(in_flight) < self.settings.concurrency:
                        url = self._frontier.popleft()
                        before = self.journal.urls[url]
                        in_flight[pool.submit(self._fetch, url, before)] = url
                    if not in_flight:
                        continue
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for outcome in done:
                        yield self._settle(in_flight.pop(outcome), outcome)
            finally:
                for outcome in in_flight:
                    outcome.cancel()
        self.journal.fold(completed_at=self.store.now())
        self.counts = replace(self.counts, completed=True)
