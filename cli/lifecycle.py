"""Commands that remove documents: purge (what removed paths alone still reference, older
revisions) and rm (one document on purpose)."""

from __future__ import annotations

from datetime import timedelta

import click

from bucketdigest.cli.group import cli, library_errors
from bucketdigest.cli.options import store_options
from bucketdigest.cli.params import Duration
from bucketdigest.monitor.purge import PurgeRule
from bucketdigest.runner.lifecycle import Removal, purge_bucket, remove
from bucketdigest.shared.config import StoreSettings


def _render(removal: Removal, as_json: bool) -> None:
    run = removal.run
    if as_json:
        click.echo(run.to_json().decode(), nl=False)
        return
    verb = "would purge" if run.dry_run else "purged"
    click.echo(f"{verb} {len(run.purged)} document(s), kept {len(run.kept)} ({run.rule})")
    for digest in run.purged:
        click.echo(f"{digest}  {verb}")
    for skip in run.kept:
        click.echo(f"{skip.digest}  kept: {skip.reason}")
    if removal.index is not None:
        click.echo(removal.index.line())


@cli.command()
@store_options
@click.option("--dry-run", is_flag=True, help="List what would be purged; change nothing.")
@click.option(
    "--older-than",
    type=Duration(),
    default="7d",
    show_default=True,
    help="Grace period: only paths removed (or replaced) longer ago than this.",
)
@click.option(
    "--superseded", is_flag=True, help="Also purge old revisions of paths that hold newer files."
)
@click.option("--json", "as_json", is_flag=True, help="The purge record as JSON.")
@library_errors
def purge(
    store: StoreSettings,
    dry_run: bool,
    older_than: timedelta,
    superseded: bool,
    as_json: bool,
) -> None:
    """Remove what only removed paths still reference: result, source, markers, work files,
    registry records and search rows. A document any live path holds is never purged.

    Example: bucketdigest purge --dry-run --older-than 30d
    """
    rule = PurgeRule(older_than=older_than, superseded=superseded)
    _render(purge_bucket(store, rule, dry_run=dry_run), as_json)


@cli.command(name="rm")
@click.argument("path_or_hash")
@store_options
@click.option("--json", "as_json", is_flag=True, help="The purge record as JSON.")
@library_errors
def rm_command(path_or_hash: str, store: StoreSettings, as_json: bool) -> None:
    """Remove one document (by hash or ingested path) and everything of it from the bucket.
    A source that still holds the file brings it back at its next ingest.

    Example: bucketdigest rm "rules/Old Errata.pdf"
    """
    removal = remove(store, path_or_hash)
    _render(removal, as_json)
    if not removal.run.purged:
        raise SystemExit(1)
