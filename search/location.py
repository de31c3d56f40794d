"""Where the index lives, and how LanceDB reaches it: ``<store>/index`` with the same endpoint,
region and credentials (boto3's default chain) as every other request of the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import ConfigError


@dataclass(frozen=True)
class IndexLocation:
    """A LanceDB URI and the storage options it needs."""

    uri: str
    storage_options: dict[str, str]


def _s3_options(settings: StoreSettings) -> dict[str, str]:
    import boto3

    session = boto3.Session(region_name=settings.region)
    credentials = session.get_credentials()
    if credentials is None:
        raise ConfigError("the search index needs AWS credentials (boto3's default chain)")
    frozen = credentials.get_frozen_credentials()
    options = {
        "aws_access_key_id": frozen.access_key,
        "aws_secret_access_key": frozen.secret_key,
        "region": settings.region or session.region_name or "us-east-1",
    }
    if frozen.token:
        options["aws_session_token"] = frozen.token
    if settings.endpoint_url:
        options["endpoint"] = settings.endpoint_url
        options["allow_http"] = str(settings.endpoint_url.startswith("http://")).lower()
    # as boto3 addresses buckets: path style on request, and on any custom endpoint
    virtual = not settings.path_style and settings.endpoint_url is None
    options["virtual_hosted_style_request"] = str(virtual).lower()
    return options


def index_location(settings: StoreSettings) -> IndexLocation:
    """The index of the store named by ``settings.bucket``."""
    folder = keys.INDEX_PREFIX.rstrip("/")
    url = settings.bucket
    if url.startswith("s3://"):
        parsed = urlparse(url)
        prefix = parsed.path.strip("/")
        uri = f"s3://{parsed.netloc}/{prefix + '/' if prefix else ''}{folder}"
        return IndexLocation(uri, _s3_options(settings))
    if url.startswith("file://"):
        url = urlparse(url).path
    return IndexLocation(str(Path(url).resolve() / folder), {})
