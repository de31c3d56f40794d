"""Settings and the bucket URL: which store to open, and how."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore

DEFAULT_BUCKET = "./bucketdigest-data"


MAX_UPLOAD_BYTES = 512 << 20
"""The largest document the inbox takes (the bucket's ``inbox_max_bytes`` unless set) and
``serve`` accepts in one upload request (``--max-upload``)."""

MONITOR_SECONDS = 60.0
"""How often a monitor pass runs: ``bucketdigest monitor``'s, each worker's monitor duty, and
with it the fleet's indexing (at most once per pass across the fleet)."""


@dataclass(frozen=True)
class StoreSettings:
    """Where the bucket is and how to reach it; built once by the CLI."""

    bucket: str = DEFAULT_BUCKET
    endpoint_url: str | None = None
    region: str | None = None
    path_style: bool = False
    role: str | None = None
    """The role the command runs as (``shared/policy.py``), named in access-denied errors."""
    optimistic_claims: bool = False
    """The store ignores conditional writes: emulate them by write-then-read-back
    (``--claims optimistic``, :mod:`bucketdigest.shared.stores.optimistic`)."""
    claim_settle: float = 1.0
    """Seconds an optimistic write waits before reading its version back."""
    create: bool = True
    """Make a local bucket folder that is not there yet. The commands that fill a bucket
    (``ingest``, ``run``) do; the others refuse a folder that is not there (a mistyped
    ``--bucket`` is an error, not an empty bucket made on the spot)."""


def open_store(settings: StoreSettings, *, self_test: bool = True) -> Store:
    """Open the store named by ``settings.bucket``: ``s3://bucket[/prefix]``, ``file://DIR`` or a
    directory path. S3 stores are self-tested for conditional writes unless told not to."""
    url = settings.bucket
    if url.startswith("s3://"):
        # boto3 takes a quarter of a second to import: only S3 stores pay for it
        from bucketdigest.shared.selftest import check_conditional_writes
        from bucketdigest.shared.stores.s3 import S3Store

        parsed = urlparse(url)
        if not parsed.netloc:
            raise ConfigError(f"bucket URL {url!r} names no bucket (expected s3://bucket/prefix)")
        store = S3Store(
            parsed.netloc,
            parsed.path,
            endpoint_url=settings.endpoint_url,
            region=settings.region,
            path_style=settings.path_style,
            role=settings.role,
        )
        if settings.optimistic_claims:
            from bucketdigest.shared.stores.optimistic import OptimisticStore

            return OptimisticStore(store, settings.claim_settle)
        if self_test:
            check_conditional_writes(store)
        return store
    if url.startswith("file://"):
        url = urlparse(url).path
    elif "://" in url:
        raise ConfigError(f"unsupported bucket URL {url!r}: use s3://bucket/prefix or a directory")
    folder = Path(url).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"no bucket at {settings.bucket}: it is a file, not a folder")
    if not folder.exists() and not settings.create:
        raise ConfigError(
            f"no bucket at {settings.bucket} (create it with `bucketdigest ingest` or "
            "`bucketdigest run`)"
        )
    return LocalStore(folder)
