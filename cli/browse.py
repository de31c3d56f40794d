"""Commands that look at the bucket and the chain: status, ls, get, digesters, samples."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live

from bucketdigest.cli import render
from bucketdigest.cli.group import cli, library_errors
from bucketdigest.cli.options import (
    store_options,
)
from bucketdigest.runner.bucket import Bucket
from bucketdigest.runner.overview import overview
from bucketdigest.runner.overview import watch as watch_overview
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.worker.digesters import describe_chain


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="The chain as JSON.")
def digesters(as_json: bool) -> None:
    """List the digest chain: order, outputs, version and the file types each applies to.

    Example: bucketdigest digesters
    """
    rows = describe_chain()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    Console().print(render.digesters_table(rows))
    groups = ", ".join(
        f"{name}: {' '.join(sorted(exts))}"
        for name, exts in EXTENSION_GROUPS.items()
        if name != "all"
    )
    click.echo(f"file types: {groups}")


@cli.command()
@store_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Counts (todo, processing, failed, done), failures and runs as JSON.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Refresh the tables in place (Ctrl-C to leave), with documents per minute and ETA.",
)
@click.option(
    "--every",
    type=click.FloatRange(1),
    default=10,
    show_default=True,
    help="Seconds between refreshes with --watch.",
)
@library_errors
def status(store: StoreSettings, as_json: bool, watch: bool, every: float) -> None:
    """Show documents per state, throughput and ETA, recent failures, ingest runs and the
    search index.

    Example: bucketdigest status --watch
    """
    if as_json and watch:
        raise click.UsageError("--json and --watch do not go together")
    target = open_store(store, self_test=False)
    if as_json:
        click.echo(json.dumps(overview(target, store).to_dict(), indent=2))
        return
    out = Console(soft_wrap=True)
    if not watch:
        out.print(render.status_view(overview(target, store)))
        return
    stop = threading.Event()  # Ctrl-C ends the watch after the refresh in hand
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Live(console=out, auto_refresh=False) as live:
        for current in watch_overview(target, store, every, stop):
            live.update(render.status_view(current), refresh=True)


@cli.command(name="ls")
@store_options
@click.option("--source", help="Only sources whose URL or path contains this text.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file.")
@click.option(
    "--all-revisions",
    is_flag=True,
    help="Also what paths held before (superseded) and files gone from their source.",
)
@library_errors
def ls_command(
    store: StoreSettings, source: str | None, as_json: bool, all_revisions: bool
) -> None:
    """List ingested files: source, path, document hash and state.

    Example: bucketdigest ls --source rulebooks.git
    """
    entries = Bucket(store, check_writes=False).files(source, all_revisions=all_revisions)
    if as_json:
        for entry in entries:
            click.echo(json.dumps(render.catalog_json(entry)))
    else:
        render.catalog_table(Console(soft_wrap=True), entries)


@cli.command()
@click.argument("path_or_hash")
@store_options
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to unpack the result into [default: a folder here named after the file: "
    "./core for rules/core.pdf].",
)
@click.option(
    "--format",
    "form",
    type=click.Choice(["files", "docling"]),
    default="files",
    show_default=True,
    help="files: the result's files; docling: the document as DoclingDocument JSON "
    "(document.docling.json in the folder).",
)
@library_errors
def get(path_or_hash: str, store: StoreSettings, output: Path | None, form: str) -> None:
    """Download a document's result (by hash or ingested path) and unpack it.

    Example: bucketdigest get "rules/Core Rules.pdf" -o ./core-rules
    """
    bucket = Bucket(store, check_writes=False)
    if form == "docling":
        click.echo(str(bucket.save_docling(path_or_hash, output)))
        return
    digest, folder, members = bucket.get(path_or_hash, output)
    click.echo(f"{digest}: {len(members)} files in {folder}")


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--count", type=click.IntRange(1), default=5, show_default=True, help="How many documents."
)
@click.option(
    "--pages", type=click.IntRange(1), default=4, show_default=True, help="Pages per document."
)
def samples(folder: Path, count: int, pages: int) -> None:
    """Write sample rulebook PDFs (headings, two columns, a table, an image) into FOLDER.

    Example: bucketdigest samples ./pdfs --count 20
    """
    from bucketdigest.shared.samples import make_samples  # loads PyMuPDF: only when asked

    for path in make_samples(folder, count, pages):
        click.echo(str(path))
