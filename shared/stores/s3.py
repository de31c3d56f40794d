"""S3Store: the Store protocol on any S3-compatible service (AWS, MinIO, R2, Ceph, moto).

Retries live in exactly one layer, here: botocore's own retries are switched off
(``total_max_attempts=1``) and every call goes through one tenacity policy that retries
``TransientStoreError`` (5xx, 503 SlowDown, throttling, 409 ConditionalRequestConflict,
timeouts, dropped connections) with exponential backoff and jitter. A 412 is an answer, never
retried. botocore's retries are not used because they do not cover 409 and because after an
ambiguous failure of a conditional write (the request may have landed) a retry that meets 412
must check whether the object now holds *our* bytes: markers carry a unique token, so equal
bytes mean our own write succeeded.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from tenacity import (
    RetryCallState,
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from bucketdigest.shared.errors import (
    Conflict,
    NotFound,
    StoreError,
    TransientStoreError,
)
from bucketdigest.shared.store import ObjectInfo, StoredObject
from bucketdigest.shared.stores.s3_errors import access_denied, translate_error

log = logging.getLogger(__name__)

T = TypeVar("T")

_DELETE_BATCH = 1000


class S3Store:
    """A bucket (and optional key prefix) on an S3-compatible service."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        path_style: bool = False,
        client: Any = None,
        max_attempts: int = 6,
        max_retry_seconds: float = 60.0,
        role: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        self.role = role
        """The role this process runs as, named in access-denied errors."""
        self.supports_conditional_delete = True

        # one client, whose own retries are off: tenacity retries, by the policy below
        self.client = client or boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            config=Config(
                retries={"total_max_attempts": 1},
                connect_timeout=10,
                read_timeout=60,
                s3={"addressing_style": "path" if path_style else "auto"},
            ),
        )

        # the store's clock, read from the Date of every answer
        self._clock_offset = timedelta(0)
        self.client.meta.events.register("after-call.s3", self._note_server_date)

        self._retry_policy = dict(
            retry=retry_if_exception_type(TransientStoreError),
            wait=wait_random_exponential(multiplier=0.1, max=5),
            stop=stop_after_attempt(max_attempts) | stop_after_delay(max_retry_seconds),
            reraise=True,
        )
        self.retries: Counter[str] = Counter()
        """Requests retried, by kind (``GET``, ``PUT``, ``LIST`` ...), for metrics."""

    def _note_server_date(self, http_response: Any = None, **_: Any) -> None:
        date = http_response.headers.get("Date") if http_response is not None else None
        if date:
            with contextlib.suppress(TypeError, ValueError):
                self._clock_offset = parsedate_to_datetime(date) - datetime.now(UTC)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._clock_offset

    @functools.cached_property
    def _presigner(self) -> Any:
        """A SigV4 client for presigned URLs (so the conditions they carry are signed), with
        the store's endpoint, region and credentials."""
        meta = self.client.meta
        credentials = self.client._request_signer._credentials  # the store's own identity
        return boto3.client(
            "s3",
            endpoint_url=meta.endpoint_url,
            region_name=meta.region_name or "us-east-1",
            aws_access_key_id=credentials.access_key if credentials else None,
            aws_secret_access_key=credentials.secret_key if credentials else None,
            aws_session_token=credentials.token if credentials else None,
            config=Config(signature_version="s3v4", s3=meta.config.s3),
        )

    def presign(
        self, method: str, key: str, conditions: dict[str, str] | None = None, expires: int = 300
    ) -> str:
        """A URL that lets its holder GET or PUT ``key`` for ``expires`` seconds without
        credentials (the broker hands these out). The ``If-None-Match`` / ``If-Match`` in
        ``conditions`` are signed: the holder must send them, and S3 enforces them."""
        params = {"Bucket": self.bucket, "Key": self._key(key)}
        for header, param in (("If-None-Match", "IfNoneMatch"), ("If-Match", "IfMatch")):
            if conditions and header in conditions:
                params[param] = conditions[header]
        operation = {"GET": "get_object", "PUT": "put_object"}[method]
        return str(
            self._presigner.generate_presigned_url(operation, Params=params, ExpiresIn=expires)
        )

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _call(self, what: str, fn: Callable[[], T], ambiguous: list[bool] | None = None) -> T:
        """Run ``fn`` under the retry policy, translating errors; note transient failures in
        ``ambiguous`` so a conditional write can tell a lost race from its own landed retry."""

        def attempt() -> T:
            try:
                return fn()
            except Exception as exc:
                translated = translate_error(exc, what, self.role)
                if isinstance(translated, TransientStoreError) and ambiguous is not None:
                    ambiguous[0] = True
                if translated is exc:
                    raise
                raise translated from exc

        warn = before_sleep_log(log, logging.WARNING)

        def before_retry(state: RetryCallState) -> None:
            self.retries[what.split(" ", 1)[0]] += 1
            warn(state)

        retrying = Retrying(**self._retry_policy, before_sleep=before_retry)  # type: ignore[arg-type]
        return retrying(attempt)

    def _landed(self, key: str, data: bytes) -> str | None:
        """After an ambiguous conditional write met 412: our ETag if the object holds our bytes."""
        try:
            current = self.get(key)
        except NotFound:
            return None
        return current.etag if current.data == data else None

    def get(self, key: str) -> StoredObject:
        def fetch() -> StoredObject:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            return StoredObject(
                data=response["Body"].read(),
                etag=response["ETag"],
                last_modified=response["LastModified"],
            )

        return self._call(f"GET {self.url}{key}", fetch)

    def download(self, key: str, dest: Path) -> ObjectInfo:
        def fetch() -> ObjectInfo:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            with open(dest, "wb") as handle:
                for chunk in response["Body"].iter_chunks(1 << 20):
                    handle.write(chunk)
            return ObjectInfo(
                key=key,
                size=response["ContentLength"],
                etag=response["ETag"],
                last_modified=response["LastModified"],
            )

        return self._call(f"GET {self.url}{key}", fetch)

    def head(self, key: str) -> ObjectInfo | None:
        def fetch() -> ObjectInfo:
            response = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return ObjectInfo(
                key=key,
                size=response["ContentLength"],
                etag=response["ETag"],
                last_modified=response["LastModified"],
            )

        try:
            return self._call(f"HEAD {self.url}{key}", fetch)
        except NotFound:
            return None

    def _put(self, key: str, data: bytes | Path, **conditions: str) -> str:
        def send() -> str:
            if isinstance(data, Path):
                with open(data, "rb") as body:
                    response = self.client.put_object(
                        Bucket=self.bucket, Key=self._key(key), Body=body, **conditions
                    )
            else:
                response = self.client.put_object(
                    Bucket=self.bucket, Key=self._key(key), Body=data, **conditions
                )
            return response["ETag"]

        ambiguous = [False]
        try:
            return self._call(f"PUT {self.url}{key}", send, ambiguous)
        except Conflict:
            if ambiguous[0] and isinstance(data, bytes) and (etag := self._landed(key, data)):
                return etag
            raise

    def put(self, key: str, data: bytes) -> str:
        return self._put(key, data)

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        try:
            return self._put(key, data, IfNoneMatch="*")
        except Conflict:
            return None

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        try:
            return self._put(key, data, IfMatch=etag)
        except (Conflict, NotFound):
            return None

    def delete(self, key: str, if_match: str | None = None) -> bool:
        what = f"DELETE {self.url}{key}"
        if if_match is None:
            self._call(
                what, lambda: self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
            )
            return True
        if not self.supports_conditional_delete:
            # Fallback for servers that ignore If-Match on DELETE (docs/protocol.md): compare
            # the ETag first. A writer that replaces the object between the HEAD and the DELETE
            # loses its write; the protocol tolerates that (the marker is re-derivable).
            current = self.head(key)
            if current is None or current.etag != if_match:
                return False
            self._call(
                what, lambda: self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
            )
            return True
        try:
            self._call(
                what,
                lambda: self.client.delete_object(
                    Bucket=self.bucket, Key=self._key(key), IfMatch=if_match
                ),
            )
        except (Conflict, NotFound):
            return False
        return True

    def delete_many(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": self._key(key)} for key in keys[start : start + _DELETE_BATCH]]
            response = self._call(
                f"DELETE {len(batch)} keys under {self.url}",
                lambda batch=batch: self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                ),
            )
            if errors := response.get("Errors"):
                first = errors[0]
                what = f"DELETE {self.url}{first.get('Key', '')[len(self.prefix) :]}"
                if first.get("Code") == "AccessDenied":
                    raise access_denied(what, self.role)
                raise StoreError(
                    f"{what}: "
                    f"{first.get('Code', '')} {first.get('Message', '')} "
                    f"({len(errors)} of {len(batch)} keys not deleted)"
                )

    def modified_times(self, prefix: str) -> Iterator[float]:
        return (info.last_modified.timestamp() for info in self.list(prefix))

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        remaining = limit
        after = self._key(start_after) if start_after else ""
        while remaining is None or remaining > 0:
            request: dict[str, Any] = {
                "Bucket": self.bucket,
                "Prefix": self._key(prefix),
                "MaxKeys": 1000 if remaining is None else min(1000, remaining),
            }
            if after:
                request["StartAfter"] = after
            page = self._call(
                f"LIST {self.url}{prefix}",
                lambda request=request: self.client.list_objects_v2(**request),
            )
            contents = page.get("Contents", [])
            for item in contents:
                yield ObjectInfo(
                    key=item["Key"][len(self.prefix) :],
                    size=item["Size"],
                    etag=item["ETag"],
                    last_modified=item["LastModified"],
                )
            if remaining is not None:
                remaining -= len(contents)
            if not page.get("IsTruncated") or not contents:
                return
            after = contents[-1]["Key"]
