"""The ``bucketdigest`` click group, the console it writes to, and the one place library
errors become clean messages (exit code 1). Commands live in ``jobs.py``, ``browse.py`` and
``find.py``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import click
from rich.console import Console

from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.logs import LogFormat, LogSetup

console = Console(stderr=True, soft_wrap=True)


def library_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn our errors into ``click.ClickException`` (message, exit code 1)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BucketdigestError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _apply_log_format(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None and not ctx.resilient_parsing:
        replace(LogSetup.current(), format=LogFormat(value)).apply()


def _log_format_option(*, expose: bool) -> click.Option:
    return click.Option(
        ["--log-format"],
        type=click.Choice([f.value for f in LogFormat]),
        envvar="BUCKETDIGEST_LOG_FORMAT",
        default=None,
        expose_value=expose,
        callback=None if expose else _apply_log_format,
        help="text (default) or json: one JSON object a line, with worker id, hash, attempt.",
    )


READING_COMMANDS = frozenset({"status", "ls", "get", "search", "mcp"})
"""Commands that only read the bucket: how claims are written is not theirs to show."""
WRITING_OPTIONS = frozenset({"claims", "claim_settle"})


class RoleGroup(click.Group):
    """Every command also takes ``--log-format`` after its name; a command that only reads
    does not list the options of writing (it still accepts them, as a shared script gives
    them to every command)."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(_log_format_option(expose=False))
        if (name or cmd.name) in READING_COMMANDS:
            for param in cmd.params:
                if isinstance(param, click.Option) and param.name in WRITING_OPTIONS:
                    param.hidden = True
        super().add_command(cmd, name)


@click.group(cls=RoleGroup)
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="bucketdigest")
def cli(verbose: int, log_format: str | None) -> None:
    """Turn piles of documents into searchable Markdown, coordinated through one bucket.

    Example: bucketdigest run ./pdfs
    """
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    LogSetup(level, LogFormat(log_format or LogFormat.TEXT)).apply()


cli.params.append(_log_format_option(expose=True))
