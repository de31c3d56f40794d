"""botocore's errors in our hierarchy: the only place that knows them (see ``s3.py`` for which
of them are retried, and where)."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, NoCredentialsError

from bucketdigest.shared.errors import (
    AccessDenied,
    ConfigError,
    Conflict,
    NotFound,
    StoreError,
    TransientStoreError,
)
from bucketdigest.shared.policy import ACTION_OF_REQUEST

_THROTTLING = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
}
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def access_denied(what: str, role: str | None) -> AccessDenied:
    """``access denied to KEY (role ROLE lacks ACTION)`` for the request ``what``
    (``GET s3://bucket/prefix/key``)."""
    request, _, target = what.partition(" ")
    action = ACTION_OF_REQUEST.get(request, request)
    who = f"role {role}" if role else "the credentials"
    return AccessDenied(f"access denied to {target} ({who} lacks {action})")


def translate_error(exc: Exception, what: str, role: str | None = None) -> Exception:
    """Map a botocore exception to our hierarchy; the only place that knows botocore errors.
    ``role`` is the role the process runs as, for access-denied messages."""
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
        if code == "AccessDenied" or status == 403:
            return access_denied(what, role)
        if status == 401:
            return ConfigError(f"{what}: not authenticated ({code}); check the credentials")
        return StoreError(message)
    if isinstance(exc, NoCredentialsError):
        return ConfigError(f"{what}: no AWS credentials found (boto3's default chain)")
    if isinstance(exc, HTTPClientError):
        return TransientStoreError(f"{what}: {exc}")
    if isinstance(exc, BotoCoreError):
        return StoreError(f"{what}: {exc}")
    return exc
