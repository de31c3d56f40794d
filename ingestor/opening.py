"""From what a user names (a folder, a file, a Git URL or repository path, a web site) to the
source that lists its files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bucketdigest.ingestor.crawl import CrawlSettings
from bucketdigest.ingestor.git import GitSource, is_git_url, is_local_repository
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.site import SiteSource
from bucketdigest.ingestor.sources import FolderSource, Source
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.records import FileError
from bucketdigest.shared.store import Store


def open_sources(
    specs: Iterable[str],
    file_filter: FileFilter,
    *,
    ref: str,
    cache_dir: Path,
    crawl: tuple[Store, CrawlSettings] | None = None,
) -> tuple[list[Source], list[FileError]]:
    """Folders, files and Git repositories (URLs or local repository paths) named by
    ``specs``, and with ``crawl`` (the store pages go to, how to crawl), http(s) URLs as web
    sites; those that cannot be opened come back as errors naming them."""
    sources: list[Source] = []
    errors: list[FileError] = []
    for spec in specs:
        try:
            if crawl is not None and spec.startswith(("http://", "https://")):
                sources.append(SiteSource(spec, crawl[0], file_filter, crawl[1]))
            elif is_git_url(spec) or is_local_repository(Path(spec)):
                url = spec if is_git_url(spec) else str(Path(spec).resolve())
                sources.append(GitSource(url, file_filter, cache_dir, ref))
            elif Path(spec).exists():
                sources.append(FolderSource(Path(spec), file_filter))
            else:
                errors.append(FileError(path=spec, reason="no such file, folder or repository"))
        except (OSError, BucketdigestError) as exc:
            errors.append(FileError(path=spec, reason=str(exc)))
    return sources, errors
