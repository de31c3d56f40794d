"""``bucketdigest serve``: the HTTP API and the web pages."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bucketdigest.cli.group import cli, console, library_errors
from bucketdigest.cli.options import index_cache_options, priority_option, store_options
from bucketdigest.search.cache import IndexCacheSettings
from bucketdigest.shared.config import MAX_UPLOAD_BYTES, StoreSettings
from bucketdigest.shared.keys import Priority

if TYPE_CHECKING:
    from bucketdigest.runner.remote import Uploaded

TOKEN_VARIABLE = "BUCKETDIGEST_SERVE_TOKEN"
DEFAULT_PROCESSES = min(os.cpu_count() or 1, 8)


@cli.command()
@store_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--allow-writes",
    is_flag=True,
    help=f"Enable retry, reprocess and uploads, for requests bearing the token in "
    f"${TOKEN_VARIABLE} or a bucket token that may (tokens add NAME --scope upload).",
)
@click.option(
    "--max-upload",
    type=click.IntRange(1),
    default=MAX_UPLOAD_BYTES >> 20,
    show_default=True,
    help="MiB one upload request may carry (POST /api/documents); more is refused with 413.",
)
@click.option(
    "--sync-wait",
    type=click.FloatRange(1),
    default=120.0,
    show_default=True,
    help="Seconds a synchronous conversion (docling-serve's /v1/convert/*, Unstructured's "
    "partition) waits for the workers before answering as those services do when out of time.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep fetched result zips here (default: a temporary folder).",
)
@click.option(
    "--cache-size",
    type=click.IntRange(16),
    default=1024,
    show_default=True,
    help="MiB of disk the cached result zips may take.",
)
@click.option(
    "--cors-origin", multiple=True, help="Let pages from this origin call the API (repeatable)."
)
@click.option(
    "--allowed-host",
    multiple=True,
    help="A name clients reach the server by (repeatable); requests naming any other host "
    "are refused (DNS rebinding). The bound address and loopback names are always allowed.",
)
@click.option(
    "--show-locations",
    is_flag=True,
    help="Show every client the source folders documents came from and the workers that "
    "processed them (by default a folder is shown by its last name, a worker not at all).",
)
@click.option(
    "--processes",
    type=click.IntRange(1, 64),
    default=DEFAULT_PROCESSES,
    show_default=True,
    help="Server processes answering requests at once (one per core: a search holds a "
    "process while it scans the index). Each keeps its own embedding model (~150 MB).",
)
@click.option(
    "--mcp",
    is_flag=True,
    help="Also answer AI assistants over the Model Context Protocol at /mcp (streamable "
    "HTTP; read-only tools: search, get_document, get_page, list_documents, status).",
)
@click.option(
    "--broker",
    is_flag=True,
    help="Also broker work for workers without bucket credentials (bucketdigest work --via "
    "URL --token T; tokens: bucketdigest tokens add NAME). Needs an s3:// bucket.",
)
@click.option(
    "--require-token",
    is_flag=True,
    help="Every route but /api/healthz asks for a token that may read (bucketdigest tokens add "
    "NAME --scope read): Bearer, X-Api-Key, or the web page's sign-in. Needed to serve a "
    "private library beyond this machine.",
)
@click.option(
    "--public-metrics",
    is_flag=True,
    help="With --require-token, leave /metrics open (a Prometheus scraper without a token).",
)
@index_cache_options
@library_errors
def serve(
    store: StoreSettings,
    host: str,
    port: int,
    allow_writes: bool,
    max_upload: int,
    sync_wait: float,
    cache_dir: Path | None,
    cache_size: int,
    cors_origin: tuple[str, ...],
    allowed_host: tuple[str, ...],
    show_locations: bool,
    index_cache: IndexCacheSettings,
    processes: int,
    mcp: bool,
    broker: bool,
    require_token: bool,
    public_metrics: bool,
) -> None:
    """Serve the search page, document pages, a status dashboard and a JSON API (/docs).

    Example: bucketdigest serve --bucket s3://rulebooks/prod --port 8080
    """
    from bucketdigest.serve.app import run_server  # FastAPI loads only for this command
    from bucketdigest.serve.backend import MIN_TOKEN_CHARS, ServeSettings
    from bucketdigest.serve.results import CacheSettings

    token = os.environ.get(TOKEN_VARIABLE, "") if allow_writes else ""
    if allow_writes and len("".join(token.split())) < MIN_TOKEN_CHARS:
        raise click.UsageError(
            f"--allow-writes needs ${TOKEN_VARIABLE} ({MIN_TOKEN_CHARS} characters or more, not "
            "counting spaces)"
        )
    settings = ServeSettings(
        store=store,
        host=host,
        port=port,
        token=token or None,
        cache=CacheSettings(directory=cache_dir, max_bytes=cache_size << 20),
        cors_origins=cors_origin,
        allowed_hosts=allowed_host,
        show_locations=show_locations,
        index_cache=index_cache,
        processes=processes,
        mcp=mcp,
        broker=broker,
        require_token=require_token,
        public_metrics=public_metrics,
        max_upload=max_upload << 20,
        sync_wait=sync_wait,
    )
    run_server(
        settings,
        announce=lambda: console.print(
            f"serving {store.bucket} on http://{host}:{port}/ (API: /docs)"
        ),
    )


@cli.command(name="mcp")
@store_options
@index_cache_options
@click.option(
    "--show-locations",
    is_flag=True,
    help="Tell the assistant the source folders documents came from.",
)
@library_errors
def mcp_command(
    store: StoreSettings, index_cache: IndexCacheSettings, show_locations: bool
) -> None:
    """Answer an AI assistant over the Model Context Protocol on stdin/stdout (its tools:
    search, get_document, get_page, list_documents, status). Add it to an assistant's MCP
    servers as the command `bucketdigest mcp --bucket ...`.

    Example: bucketdigest mcp --bucket s3://my-bucket/digest
    """
    from bucketdigest.serve.agents import serve_stdio  # the MCP SDK loads for this command

    serve_stdio(store, index_cache, show_locations=show_locations)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--to",
    "server",
    required=True,
    envvar="BUCKETDIGEST_SERVER",
    help="The server's URL (bucketdigest serve --allow-writes), e.g. https://library.example.",
)
@click.option(
    "--token",
    required=True,
    envvar="BUCKETDIGEST_TOKEN",
    help="A token that may upload (bucketdigest tokens add NAME --scope upload).",
)
@click.option(
    "--name",
    "names",
    multiple=True,
    help="The name a file is queued under (one per file, in order; default: its file name, "
    "a folder's files with their paths in it).",
)
@priority_option
@click.option("--wait", is_flag=True, help="Follow the documents until each is done or failed.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per document.")
@library_errors
def upload(
    files: tuple[Path, ...],
    server: str,
    token: str,
    names: tuple[str, ...],
    priority: str,
    wait: bool,
    as_json: bool,
) -> None:
    """Send documents to a bucket through its server, without bucket credentials: each is
    stored and queued, and its state can be followed (--wait).

    Example: bucketdigest upload scans/*.pdf --to https://library.example --token bdw_...
    """
    from bucketdigest.runner.remote import files_to_send, follow, upload_files

    def sent_line(batch: list[Uploaded]) -> None:
        for document in batch if not as_json else ():
            console.print(f"queued {document.name} ({document.digest[:12]}, {document.state})")

    def state_line(document: Uploaded, state: str) -> None:
        if not as_json:
            console.print(f"{state} {document.name}")

    paths, chosen = files_to_send(files, names or None)
    sent = upload_files(
        server, token, paths, names=chosen, priority=Priority(priority), on_sent=sent_line
    )
    states = follow(token, sent, on_change=state_line) if wait else {}
    for document in sent if as_json else ():
        state = states.get(document.digest, document.state)
        click.echo(json.dumps({**asdict(document), "state": state}))
    if "failed" in states.values():
        raise SystemExit(1)
