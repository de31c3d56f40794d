"""``bucketdigest tokens``: the bucket's tokens (workers without credentials, readers,
writers, uploaders)."""

from __future__ import annotations

import click

from bucketdigest.cli.group import cli, library_errors
from bucketdigest.cli.options import store_options
from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.tokens import DEFAULT_WORKERS, Scope


@cli.group()
def tokens() -> None:
    """The bucket's tokens, stored hashed in the bucket, revocable at once, each with its
    scopes: work (a worker without bucket credentials, through serve --broker), read
    (searching and reading through serve --require-token), upload (sending documents in, with
    read) and write (retry, reprocess, settings; with read and upload).

    Example: bucketdigest tokens add laptop-anna
    """


@tokens.command(name="add")
@click.argument("name")
@click.option(
    "--scope",
    "scopes",
    type=click.Choice([s.value for s in Scope]),
    multiple=True,
    default=[Scope.WORK.value],
    show_default=True,
    help="What it may do (repeat for several): work, read, upload (with read), write (with "
    "read and upload).",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="With work: the claims its workers may hold at once through the broker.",
)
@store_options
@library_errors
def add(name: str, scopes: tuple[str, ...], workers: int, store: StoreSettings) -> None:
    """Make a token NAME; it is shown once, here, and never stored.

    Example: bucketdigest tokens add gpu-box-1; bucketdigest tokens add anna --scope read
    """
    token, record = Bucket(store).add_token(name, tuple(Scope(s) for s in scopes), workers)
    click.echo(
        f"token {record.token_id} for {record.name} ({', '.join(record.scopes)}; keep it: "
        "it is not shown again)"
    )
    click.echo(token)


@tokens.command(name="ls")
@store_options
@library_errors
def ls(store: StoreSettings) -> None:
    """List the tokens: id, name, scopes, made, revoked.

    Example: bucketdigest tokens ls
    """
    for record in Bucket(store, check_writes=False).tokens():
        revoked = f"revoked {record.revoked_at:%Y-%m-%d %H:%M}" if record.revoked_at else "live"
        click.echo(
            f"{record.token_id}  {record.name}  {','.join(record.scopes)}  "
            f"made {record.created_at:%Y-%m-%d %H:%M}  {revoked}"
        )


@tokens.command(name="revoke")
@click.argument("name_or_id")
@store_options
@library_errors
def revoke(name_or_id: str, store: StoreSettings) -> None:
    """Revoke a token by name or id: it is refused from its next request, and a job its
    worker held is requeued once its lease expires.

    Example: bucketdigest tokens revoke gpu-box-1
    """
    record = Bucket(store).revoke_token(name_or_id)
    click.echo(f"revoked {record.token_id} ({record.name})")
