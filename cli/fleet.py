"""Commands for running a fleet: the least-privilege IAM policy of each role."""

from __future__ import annotations

import json

import click

from bucketdigest.cli.group import cli
from bucketdigest.shared.policy import ROLE_OF_COMMAND, Role, iam_policy


@cli.command()
@click.option(
    "--role",
    type=click.Choice([r.value for r in Role]),
    required=True,
    help="worker, ingestor, monitor, reader (read-only) or admin (everything in the prefix).",
)
@click.option(
    "--bucket",
    envvar="BUCKETDIGEST_BUCKET",
    required=True,
    help="s3://bucket/prefix the policy is confined to (one prefix per tenant).",
)
@click.option(
    "--delete-source-when-done",
    "cleanup",
    is_flag=True,
    help="Workers run in cleanup mode: let them delete store/raw/ objects too, and the "
    "monitor (retry, reprocess) put sources back there.",
)
def policy(role: str, bucket: str, cleanup: bool) -> None:
    """Print the IAM policy (JSON) that lets ROLE do its work under one bucket prefix and
    nothing else. Commands by role: see docs/protocol.md.

    Example: bucketdigest policy --role worker --bucket s3://my-bucket/digest
    """
    try:
        document = iam_policy(Role(role), bucket, cleanup=cleanup)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bucket") from exc
    click.echo(json.dumps(document, indent=2))
    commands = sorted(c for c, r in ROLE_OF_COMMAND.items() if r.value == role)
    click.echo(f"commands of role {role}: {', '.join(commands)}", err=True)
