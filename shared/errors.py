"""The one error hierarchy of bucketdigest."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bucketdigest.shared.records import DigestRecords


class BucketdigestError(Exception):
    """Base class of every error bucketdigest raises on purpose."""


class ConfigError(BucketdigestError):
    """A setting or bucket URL is invalid, or the store lacks a capability we need."""


class DamagedSettings(ConfigError):
    """The bucket's settings record does not parse or holds a value its setting refuses: no
    process follows it until someone mends it."""


class AccessDenied(ConfigError):
    """The credentials do not allow a request: which key, which action, and the role the
    command runs as (see ``shared/policy.py``)."""


class StoreError(BucketdigestError):
    """A store operation failed."""


class NotFound(StoreError):
    """The key does not exist."""


class Conflict(StoreError):
    """A conditional write lost: the key exists, or its version is not the one expected."""


class TransientStoreError(StoreError):
    """A fault worth retrying: throttling, 5xx, 409 conflicts, timeouts, dropped connections."""


class InvalidKey(StoreError):
    """A key that is not a safe relative path (.., absolute, NUL, backslash, empty part)."""


class CorruptRecord(BucketdigestError):
    """A marker or record in the bucket is not valid JSON of the expected shape."""


class DamagedResult(BucketdigestError):
    """A document's result zip does not open, or a member fails its checksum; its source in
    ``store/raw/`` is untouched, so reprocessing the document makes the result again."""

    def __init__(self, digest: str, reason: str) -> None:
        super().__init__(
            f"{digest}: result damaged ({reason}): reprocess it "
            f"(bucketdigest reprocess {digest[:12]})"
        )
        self.digest = digest
        self.reason = reason


class DigestError(BucketdigestError):
    """Converting or enriching a document failed; a later attempt may succeed."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class PermanentDigestError(DigestError):
    """The document itself is unusable (not a PDF, encrypted, empty): retrying cannot help."""


class ChainIncomplete(DigestError):
    """The digest chain ended with outputs not final, or with the document's text failed."""

    def __init__(self, message: str, detail: str, records: DigestRecords, final: bool) -> None:
        super().__init__(message, detail)
        self.records = records
        self.final = final
        """True when the primary output failed for good: no retry can finish the document."""


class Interrupted(BucketdigestError):
    """A job was stopped from outside (lease lost, shutdown grace over) before it finished."""


class WorkersDied(BucketdigestError):
    """Local workers keep exiting in error before they finish a document."""


class SourceError(BucketdigestError):
    """A source (folder, repository, file) cannot be read."""


class SearchIndexError(BucketdigestError):
    """The search index cannot be used as it is."""


class IndexNotFound(SearchIndexError):
    """The bucket has no search index yet."""


class IndexMismatch(SearchIndexError):
    """The index was built with another embedding model or schema: it must be rebuilt."""


class IndexDamaged(SearchIndexError):
    """The index's objects cannot be read (damaged, or partly deleted): it must be rebuilt."""


class InvalidQuery(BucketdigestError):
    """A search the index cannot answer as asked (empty, too long, a limit out of range)."""


class UnsafeArchive(BucketdigestError):
    """An archive member whose name or kind would write outside its folder (absolute, ``..``,
    a drive letter, a symlink): the whole archive is refused."""
