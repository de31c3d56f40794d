"""The options of commands that ingest (``ingest``, ``run``): which files to take, from which
Git ref, in which queue lane, with ``--site`` how to crawl web sites, and with ``--watch`` how
to follow folders."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from bucketdigest.cli.options import option_group, priority_option
from bucketdigest.cli.params import Duration
from bucketdigest.ingestor.crawl import CrawlSettings
from bucketdigest.ingestor.ingest import IngestSettings, default_cache_dir
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.watch import SETTLE_SECONDS, WatchSettings
from bucketdigest.shared.fetch import USER_AGENT, FetchSettings
from bucketdigest.shared.filetypes import expand_extensions
from bucketdigest.shared.keys import Priority


def _ingest(
    ext: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    ref: str,
    cache_dir: Path | None,
    priority: str,
    site: bool,
    max_pages: int | None,
    max_depth: int | None,
    rate: float,
    concurrency: int,
    user_agent: str,
    timeout: float,
    retry_errors_after: timedelta,
) -> IngestSettings:
    try:
        exts = expand_extensions([part for given in ext or ("pdf",) for part in given.split(",")])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--ext") from exc
    crawl = CrawlSettings(
        max_pages=max_pages or None,
        max_depth=max_depth,
        rate=rate,
        concurrency=concurrency,
        retry_errors_after=retry_errors_after,
        # the sites crawled are the operator's own choice, an intranet's as well
        fetch=FetchSettings(user_agent=user_agent, timeout=timeout, private_networks=True),
    )
    return IngestSettings(
        file_filter=FileFilter(exts=exts, include=include, exclude=exclude),
        ref=ref,
        cache_dir=cache_dir or default_cache_dir(),
        priority=Priority(priority),
        crawl=crawl if site else None,
    )


ingest_options = option_group(
    "ingest",
    _ingest,
    click.option(
        "--ext",
        multiple=True,
        help="Extensions or groups to take, comma-separated or repeated [default: pdf]: "
        "documents (pdf, epub, xps, cbz...), text (md, txt), images (png, jpg, tiff), web (html, "
        "htm), office (docx, pptx, xlsx), notebooks (note), links (url, webloc), all. A site "
        "crawl takes HTML pages and these.",
    ),
    click.option(
        "--include",
        multiple=True,
        help="Only paths (for a site, URLs) matching this glob (repeatable).",
    ),
    click.option(
        "--exclude", multiple=True, help="Paths (for a site, URLs) to skip, by glob (repeatable)."
    ),
    click.option(
        "--ref",
        default="HEAD",
        show_default=True,
        help="Git ref to ingest (default: the remote's HEAD).",
    ),
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="BUCKETDIGEST_CACHE_DIR",
        help="Where Git sources are cloned (bare, no LFS content) and kept for later fetches "
        "[default: ~/.cache/bucketdigest/git].",
    ),
    priority_option,
    click.option(
        "--site",
        is_flag=True,
        help="Crawl http(s) SOURCES as web sites: the pages under the URL's folder, found from "
        "its sitemaps and links (else an http(s) URL is a Git repository).",
    ),
    click.option(
        "--max-pages",
        type=click.IntRange(0),
        default=10_000,
        show_default=True,
        help="Site crawl: URLs taken at most (0: no limit).",
    ),
    click.option(
        "--max-depth",
        type=click.IntRange(0),
        default=None,
        help="Site crawl: links followed from the start URL at most (sitemap pages are 1).",
    ),
    click.option(
        "--rate",
        type=click.FloatRange(min=0, min_open=True),
        default=2.0,
        show_default=True,
        help="Site crawl: requests a second to one host (a longer robots.txt Crawl-delay wins).",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(1, 64),
        default=4,
        show_default=True,
        help="Site crawl: requests in flight at once.",
    ),
    click.option(
        "--user-agent", default=USER_AGENT, show_default=True, help="Site crawl: User-Agent."
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=30.0,
        show_default=True,
        help="Site crawl: seconds to wait for a page.",
    ),
    click.option(
        "--retry-errors-after",
        type=Duration(),
        default="6h",
        show_default=True,
        help="Site crawl: fetch URLs that failed again once their error is this old (0: always).",
    ),
)


def _watch(watch: bool, settle: float, poll: bool) -> WatchSettings | None:
    if not watch and (poll or settle != SETTLE_SECONDS):
        raise click.UsageError("--settle and --poll go with --watch")
    return WatchSettings(settle, poll) if watch else None


watch_options = option_group(
    "watch",
    _watch,
    click.option(
        "--watch",
        is_flag=True,
        help="Keep following the folders: ingest what is added, changed or removed once it "
        "has stopped changing, until Ctrl-C.",
    ),
    click.option(
        "--settle",
        type=click.FloatRange(0),
        default=SETTLE_SECONDS,
        show_default=True,
        help="With --watch: seconds a folder must stay unchanged before it is ingested.",
    ),
    click.option(
        "--poll",
        is_flag=True,
        help="With --watch: look at the folders every second instead of waiting for the "
        "system's notifications (network mounts send none).",
    ),
)
