"""botocore's errors in our hierarchy: the only place that knows them (see ``s3.py`` for which
of them are retried, and where)."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, NoCredentialsError

from bucketdigest.shared.errors import (
    ConfigError,
    Conflict,
    NotFound,
    StoreError,
    TransientStoreError,
)

_THROTTLING = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
}
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def translate_error(exc: Exception, what: str) -> Exception:
    """Map a botocore exception to our hierarchy; the only place that knows botocore errors."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        message = f"{what}: {code or status} {error.get('Message', '')}".strip()
        if code in _NOT_FOUND:
            return NotFound(message)
        if status == 412 or code == "PreconditionFailed":
            return Conflict(message)
        if status == 409 or status >= 500 or code in _THROTTLING:
            return TransientStoreError(message)
        if code == "NoSuchBucket":
            return ConfigError(f"{what}: the bucket does not exist")
        if status in (401, 403):
            return ConfigError(f"{what}: access denied ({code}); check the credentials")
        return StoreError(message)
    if isinstance(exc, NoCredentialsError):
        return ConfigError(f"{what}: no AWS credentials found (boto3's default chain)")
    if isinstance(exc, HTTPClientError):
        return TransientStoreError(f"{what}: {exc}")
    if isinstance(exc, BotoCoreError):
        return StoreError(f"{what}: {exc}")
    return exc
