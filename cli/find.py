"""Commands over the search index: index (bring it up to date) and search."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console

from bucketdigest.cli import render
from bucketdigest.cli.group import cli, console, library_errors
from bucketdigest.cli.options import index_cache_options, store_options
from bucketdigest.runner.bucket import Bucket
from bucketdigest.search.cache import IndexCacheSettings
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.request import MAX_LIMIT, PER_DOCUMENT, Level, Mode, SearchRequest
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import InvalidQuery


@cli.command()
@store_options
@click.option("--rebuild", is_flag=True, help="Build the index anew from every result zip.")
@click.option(
    "--wait",
    type=click.FloatRange(0),
    default=600,
    show_default=True,
    help="Seconds to wait for another indexer (a worker's duty) to finish first.",
)
@library_errors
def index(store: StoreSettings, rebuild: bool, wait: float) -> None:
    """Bring the search index up to date with the bucket's results (or rebuild it).

    Workers keep the index current by themselves; this catches up at once.

    Example: bucketdigest index --rebuild
    """
    report = index_bucket(open_store(store), store, rebuild=rebuild, wait=wait)
    render.index_report(console, report)
    if report.busy:
        sys.exit(1)


@cli.command(name="search")
@click.argument("query", nargs=-1, required=True)
@store_options
@click.option("--documents", is_flag=True, help="Rank whole documents instead of passages.")
@click.option(
    "--mode",
    type=click.Choice([m.value for m in Mode]),
    default=Mode.HYBRID.value,
    show_default=True,
    help="keyword (BM25 on words and headings), semantic (meaning) or hybrid: every "
    "candidate of both scored by both measures, words leading when a passage holds them all.",
)
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="Hits to show."
)
@click.option("--source", help="Only documents from a source whose URL or path contains this.")
@click.option("--path", "path_glob", help="Only documents ingested under paths matching this glob.")
@click.option("--type", "file_type", help="Only this file type (extension), e.g. pdf.")
@click.option("--tag", help="Only documents with this tag (keyword).")
@click.option("--document", help="Only this document's passages (its hash): more from it.")
@click.option(
    "--per-document",
    type=click.IntRange(0, MAX_LIMIT),
    default=PER_DOCUMENT,
    show_default=True,
    help="Passages of one document at most (0: no cap).",
)
@click.option("--json", "as_json", is_flag=True, help="Hits as JSON.")
@index_cache_options
@library_errors
def search_command(
    query: tuple[str, ...],
    store: StoreSettings,
    documents: bool,
    mode: str,
    limit: int,
    source: str | None,
    path_glob: str | None,
    file_type: str | None,
    tag: str | None,
    document: str | None,
    per_document: int,
    as_json: bool,
    index_cache: IndexCacheSettings,
) -> None:
    """Search every document in the bucket: passages (default) or whole documents.

    Example: bucketdigest search "how does grappling work" --type pdf
    """
    request = SearchRequest(
        query=" ".join(query),
        level=Level.DOCUMENTS if documents else Level.CHUNKS,
        mode=Mode(mode),
        limit=limit,
        source=source,
        path=path_glob,
        file_type=file_type,
        tag=tag,
        document=document,
        per_document=per_document,
    )
    bucket = Bucket(store, index_cache=index_cache, check_writes=False)
    try:
        hits = bucket.search_request(request)
    except InvalidQuery as exc:
        raise click.UsageError(str(exc)) from exc
    if as_json:
        hits = bucket.located(hits, request.query)
        click.echo(json.dumps([hit.to_dict() for hit in hits], indent=2))
    else:
        render.hits(Console(soft_wrap=True), hits)
