"""The ``bucketdigest`` click group, the console it writes to, and the one place library
errors become clean messages (exit code 1). Commands live in ``jobs.py``, ``browse.py`` and
``find.py``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from bucketdigest.shared.errors import BucketdigestError

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


@click.group()
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="bucketdigest")
def cli(verbose: int) -> None:
    """Turn piles of documents into searchable Markdown, coordinated through one bucket.

    Example: bucketdigest run ./pdfs
    """
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
