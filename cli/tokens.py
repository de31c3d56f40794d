"""``bucketdigest tokens``: the tokens of workers without bucket credentials."""

from __future__ import annotations

import click

from bucketdigest.cli.group import cli, library_errors
from bucketdigest.cli.options import store_options
from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared.config import StoreSettings


@cli.group()
def tokens() -> None:
    """Tokens of workers that work through a broker (serve --broker) without bucket
    credentials: each worker its own, stored hashed in the bucket, revocable at once.

    Example: bucketdigest tokens add laptop-anna
    """


@tokens.command(name="add")
@click.argument("name")
@store_options
@library_errors
def add(name: str, store: StoreSettings) -> None:
    """Make a token for the worker NAME; it is shown once, here, and never stored.

    Example: bucketdigest tokens add gpu-box-1
    """
    token, record = Bucket(store).add_worker_token(name)
    click.echo(f"token {record.token_id} for {record.name} (keep it: it is not shown again)")
    click.echo(token)


@tokens.command(name="ls")
@store_options
@library_errors
def ls(store: StoreSettings) -> None:
    """List the tokens: id, name, made, revoked.

    Example: bucketdigest tokens ls
    """
    for record in Bucket(store, check_writes=False).worker_tokens():
        revoked = f"revoked {record.revoked_at:%Y-%m-%d %H:%M}" if record.revoked_at else "live"
        click.echo(
            f"{record.token_id}  {record.name}  made {record.created_at:%Y-%m-%d %H:%M}  {revoked}"
        )


@tokens.command(name="revoke")
@click.argument("name_or_id")
@store_options
@library_errors
def revoke(name_or_id: str, store: StoreSettings) -> None:
    """Revoke a token by name or id: the broker refuses it from its next request, and the job
    its worker held is requeued once its lease expires.

    Example: bucketdigest tokens revoke gpu-box-1
    """
    record = Bucket(store).revoke_worker_token(name_or_id)
    click.echo(f"revoked {record.token_id} ({record.name})")
