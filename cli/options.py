"""Options shared by several commands, declared once, each with its environment-variable
fallback. Each group reaches the command as one settings object (``store``, ``ingest``,
``worker``), built and validated here."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from bucketdigest.search.cache import DEFAULT_MAX_BYTES, IndexCacheSettings
from bucketdigest.shared.config import DEFAULT_BUCKET, StoreSettings
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.logs import LogFormat, LogSetup
from bucketdigest.shared.policy import ROLE_OF_COMMAND
from bucketdigest.worker.capacity import machine_capacity

F = Callable[..., Any]
Decorator = Callable[[F], F]


def option_group(target: str, build: Callable[..., Any], *options: Decorator) -> Decorator:
    """Declare ``options`` on a command and hand it ``build(**their values)`` as ``target``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return func(*args, **{target: build(**values)}, **kwargs)

        params = wrapper.__dict__.setdefault("__click_params__", [])
        before = len(params)
        for option in reversed(options):
            option(wrapper)
        names = [param.name for param in params[before:]]
        return wrapper

    return decorate


metrics_port_option = click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    envvar="BUCKETDIGEST_METRICS_PORT",
    help="Serve Prometheus metrics on this port (with --workers K, worker i on PORT+i-1).",
)

priority_option = click.option(
    "--priority",
    type=click.Choice([p.value for p in Priority]),
    default=Priority.NORMAL.value,
    show_default=True,
    help="Queue lane: workers take high first, then normal, then low (a share of claims "
    "goes to each lower lane, so none starves).",
)

workers_option = click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    envvar="BUCKETDIGEST_WORKERS",
    help="Worker processes on this machine [default: as many as its cores and free memory "
    "allow, a container's limits counted; the start line says how many and why].",
)


def chosen_workers(workers: int | None) -> int:
    """``--workers``, or as many as the machine has room for; the line saying which and why
    goes to stderr (``4 workers: 8 cores, 7.6 GiB free``), a log record with ``--log-format
    json``."""
    capacity = machine_capacity()
    if LogSetup.current().format is LogFormat.JSON:  # stderr holds JSON lines alone
        logging.getLogger(__name__).info("%s", capacity.describe(workers))
    else:
        click.echo(capacity.describe(workers), err=True)
    return workers or capacity.workers


CREATING_COMMANDS = frozenset({"ingest", "run"})
"""The commands that make a local bucket folder that is not there yet (they fill it)."""


def _store(
    bucket: str,
    endpoint_url: str | None,
    region: str | None,
    path_style: bool,
    claims: str,
    claim_settle: float,
) -> StoreSettings:
    command = click.get_current_context().info_name or ""
    role = ROLE_OF_COMMAND.get(command)
    return StoreSettings(
        bucket=bucket,
        endpoint_url=endpoint_url,
        region=region,
        path_style=path_style,
        role=role.value if role else None,
        optimistic_claims=claims == "optimistic",
        claim_settle=claim_settle,
        create=command in CREATING_COMMANDS,
    )


store_options = option_group(
    "store",
    _store,
    click.option(
        "--bucket",
        envvar="BUCKETDIGEST_BUCKET",
        default=DEFAULT_BUCKET,
        show_default=True,
        help="s3://bucket/prefix, file://DIR or a directory (the embedded local store).",
    ),
    click.option(
        "--endpoint-url",
        envvar="AWS_ENDPOINT_URL",
        help="S3 endpoint for MinIO, R2, Ceph, moto... (env AWS_ENDPOINT_URL).",
    ),
    click.option("--region", envvar="AWS_REGION", help="S3 region (env AWS_REGION)."),
    click.option(
        "--path-style/--virtual-host-style",
        envvar="BUCKETDIGEST_PATH_STYLE",
        default=False,
        help="S3 addressing style; MinIO and Ceph usually need --path-style.",
    ),
    click.option(
        "--claims",
        type=click.Choice(["conditional", "optimistic"]),
        default="conditional",
        show_default=True,
        envvar="BUCKETDIGEST_CLAIMS",
        help="optimistic: for stores that ignore If-None-Match/If-Match (older Ceph): claims "
        "by write-then-read-back; nothing is lost or corrupt, a document may now and then be "
        "processed twice (docs/protocol.md).",
    ),
    click.option(
        "--claim-settle",
        type=click.FloatRange(0.05),
        default=StoreSettings.claim_settle,
        show_default=True,
        envvar="BUCKETDIGEST_CLAIM_SETTLE",
        help="With --claims optimistic: seconds a write waits before reading itself back.",
    ),
)


def _index_cache(
    index_cache: Path | None, index_cache_size: int, no_index_cache: bool
) -> IndexCacheSettings:
    return IndexCacheSettings(
        enabled=not no_index_cache, folder=index_cache, max_bytes=index_cache_size << 20
    )


index_cache_options = option_group(
    "index_cache",
    _index_cache,
    click.option(
        "--index-cache",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="BUCKETDIGEST_INDEX_CACHE",
        help="Folder for the local copy of an S3 bucket's search index, brought up to date "
        "from the bucket before use [default: ~/.cache/bucketdigest/index/<bucket hash>].",
    ),
    click.option(
        "--index-cache-size",
        type=click.IntRange(1),
        default=DEFAULT_MAX_BYTES >> 20,
        show_default=True,
        help="MiB the copy may take; a larger index is searched in the bucket directly.",
    ),
    click.option(
        "--no-index-cache",
        is_flag=True,
        help="Search the bucket's index directly, keeping no local copy.",
    ),
)
