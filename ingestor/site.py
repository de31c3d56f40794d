"""A web site as a source of the ingestor: its candidates are what a crawl finds."""

from __future__ import annotations

from collections.abc import Iterator

from bucketdigest.ingestor.crawl import CrawlSettings, SiteCrawl
from bucketdigest.ingestor.crawl_scope import CrawlScope, normalize_url, site_prefix
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import Candidate
from bucketdigest.shared.records import FileError
from bucketdigest.shared.store import Store


class SiteSource:
    """A web site, crawled from its start URL when its candidates are asked for."""

    commit = ""
    lists_everything = True

    def __init__(
        self, start: str, store: Store, file_filter: FileFilter, settings: CrawlSettings
    ) -> None:
        self.name = normalize_url(start)
        self.crawl = SiteCrawl(
            store,
            self.name,
            CrawlScope(
                prefix=site_prefix(self.name),
                exts=file_filter.exts,
                include=file_filter.include,
                exclude=file_filter.exclude,
                max_depth=settings.max_depth,
                max_pages=settings.max_pages,
            ),
            settings,
        )

    def candidates(self) -> Iterator[Candidate | FileError]:
        yield from self.crawl.run()
