"""A crawled web site's records: each URL's state, the crawl log and the counts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bucketdigest.shared.records.base import JsonRecord


class UrlState(StrEnum):
    """Where one URL of a crawled site stands: found and not yet fetched, then fetched (its
    content is in ``store/raw/``) or not fetchable (``error`` says why)."""

    PENDING = "pending"
    FETCHED = "fetched"
    ERROR = "error"


@dataclass(frozen=True)
class CrawlUrl(JsonRecord):
    """One URL of a crawled site and its state; ``updated_at`` orders the records of a URL."""

    url: str
    state: UrlState
    depth: int
    updated_at: datetime
    found_on: str = ""
    """The page that links to it first, ``sitemap`` or ``start``."""
    digest: str = ""
    ext: str = ""
    size: int = 0
    final_url: str = ""
    """Where redirects led, when elsewhere."""
    etag: str = ""
    last_modified: str = ""
    error: str = ""


@dataclass(frozen=True)
class CrawlLogEntry(JsonRecord):
    """``registry/crawls/<site-id>/log/<run-id>-<n>.json``: URLs whose state a crawl changed,
    written as it goes (a page fetched, with the links found on it)."""

    site: str
    run_id: str
    urls: tuple[CrawlUrl, ...]


@dataclass(frozen=True)
class SiteCrawlState(JsonRecord):
    """``registry/crawls/<site-id>/state.json``: every URL of the site found so far, and when
    a crawl last went through to the end (records newer than that belong to the crawl under
    way, or to one that died, which the next crawl resumes)."""

    site: str
    updated_at: datetime
    completed_at: datetime | None = None
    urls: tuple[CrawlUrl, ...] = ()


@dataclass(frozen=True)
class CrawlCounts(JsonRecord):
    """What one crawl of a web site did."""

    site: str
    discovered: int = 0
    fetched: int = 0
    unchanged: int = 0
    """Fetched with the same content as before (or answered 304 Not Modified)."""
    resumed: int = 0
    """Stored by an earlier crawl that did not finish, so not fetched again."""
    errors: int = 0
    bytes: int = 0
    completed: bool = False
