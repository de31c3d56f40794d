"""A site's crawl state in the bucket, kept crash-safe at the cost of one small write per
page: a crawl appends what it learns (a page fetched, the URLs found on it) as log entries, and
folds the log into ``state.json`` when it starts and when it ends. A crawl that dies leaves its
log; the next one reads it and goes on from there.

Folding is a conditional write of ``state.json`` (If-Match its ETag, or create-if-absent),
retried on a conflict, and only the log entries it folded in are deleted afterwards, so two
crawls of one site at once lose nothing (at worst they fetch some pages twice).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime

from bucketdigest.shared import keys
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.records import CrawlLogEntry, CrawlUrl, SiteCrawlState, UrlState
from bucketdigest.shared.store import Store

_FOLD_ATTEMPTS = 5

log = logging.getLogger(__name__)


def _newer(record: CrawlUrl, than: CrawlUrl | None) -> bool:
    """Whether ``record`` supersedes ``than``: later, or as late and no longer pending."""
    if than is None or record.updated_at > than.updated_at:
        return True
    return record.updated_at == than.updated_at and than.state is UrlState.PENDING


def merge(urls: dict[str, CrawlUrl], records: Iterable[CrawlUrl]) -> None:
    """Fold ``records`` into ``urls`` (by URL, the newest record wins)."""
    for record in records:
        if _newer(record, urls.get(record.url)):
            urls[record.url] = record


class CrawlJournal:
    """The state of one site's crawl, as this crawl (``run_id``) knows and records it."""

    def __init__(self, store: Store, site: str, run_id: str) -> None:
        self.store = store
        self.site = site
        self.run_id = run_id
        self.urls: dict[str, CrawlUrl] = {}
        self.completed_at: datetime | None = None
        self._written = 0

    def _read(self) -> tuple[str | None, list[str]]:
        """Merge the stored state and log into memory; the state's ETag and the log keys."""
        etag = None
        try:
            stored = self.store.get(keys.crawl_state_key(self.site))
        except NotFound:
            pass
        else:
            etag = stored.etag
            state = SiteCrawlState.from_json(stored.data)
            if state.completed_at and (
                self.completed_at is None or state.completed_at > self.completed_at
            ):
                self.completed_at = state.completed_at
            merge(self.urls, state.urls)
        log_keys = [info.key for info in self.store.list(keys.crawl_log_prefix(self.site))]
        for key in log_keys:
            try:
                merge(self.urls, CrawlLogEntry.from_json(self.store.get(key).data).urls)
            except NotFound:  # folded in by another crawl meanwhile: it is in the state now
                continue
        return etag, log_keys

    def load(self) -> Mapping[str, CrawlUrl]:
        """Everything known of the site, the log of crawls that died folded in."""
        _, log_keys = self._read()
        if log_keys:
            self.fold()
        return self.urls

    def record(self, records: list[CrawlUrl]) -> None:
        """Append ``records`` to the log (one object) and to what this crawl knows."""
        if not records:
            return
        merge(self.urls, records)
        entry = CrawlLogEntry(site=self.site, run_id=self.run_id, urls=tuple(records))
        self.store.put(keys.crawl_log_key(self.site, self.run_id, self._written), entry.to_json())
        self._written += 1

    def fold(self, completed_at: datetime | None = None) -> None:
        """Write ``state.json`` with everything known (and, when given, that a crawl went
        through to the end at ``completed_at``), then delete the log entries it holds."""
        if completed_at is not None:
            self.completed_at = completed_at
        for _ in range(_FOLD_ATTEMPTS):
            etag, log_keys = self._read()
            state = SiteCrawlState(
                site=self.site,
                updated_at=self.store.now(),
                completed_at=self.completed_at,
                urls=tuple(self.urls[url] for url in sorted(self.urls)),
            )
            key = keys.crawl_state_key(self.site)
            if etag is None:
                written = self.store.put_if_absent(key, state.to_json())
            else:
                written = self.store.put_if_match(key, state.to_json(), etag)
            if written is not None:
                self.store.delete_many(log_keys)
                return
        log.warning(
            "%s: crawl state kept changing; its log is folded in by the next crawl", self.site
        )
