"""Whether a document with a result still has digesting to do: ``work/<hash>/`` holds a job's
partial progress or a reprocess request. A result zip alone means done; a result zip with
pending work means the job must run again (and its markers must not be cleaned away).
Requests are written here too: a reprocess request names the outputs to make again; a remake
request names none, so the worker makes every output from the source."""

from __future__ import annotations

from bucketdigest.shared import keys
from bucketdigest.shared.records import DigestRecords
from bucketdigest.shared.store import Store


def has_pending_work(store: Store, digest: str) -> bool:
    """One listing request."""
    return any(True for _ in store.list(keys.work_prefix(digest), limit=1))


def is_finished(store: Store, digest: str) -> bool:
    """A result exists and nothing waits under ``work/<hash>/``."""
    return store.head(keys.out_key(digest)) is not None and not has_pending_work(store, digest)


def write_request(store: Store, records: DigestRecords) -> None:
    """A reprocess request: the worker that claims the document starts from ``records``."""
    store.put(keys.work_request_key(records.digest), records.to_json())


def request_remake(store: Store, digest: str, file_type: str) -> None:
    """A request with no records: the worker that claims the document runs the whole chain
    from its source and replaces its result (one that is damaged, say) without reading it."""
    write_request(store, DigestRecords(digest=digest, file_type=file_type, outputs=()))
