"""The start-up self-test: refuse a store whose conditional writes are not enforced.

Several S3-compatible servers and emulators silently ignore ``If-None-Match``/``If-Match``; on
such a store every claim would "succeed" and two workers would process the same job while each
believes it owns it. Conditional DELETE is optional: where it is ignored the store is flagged and
``S3Store.delete`` falls back to compare-then-delete (see docs/protocol.md).
"""

from __future__ import annotations

import logging
import uuid

from bucketdigest.shared import keys
from bucketdigest.shared.errors import ConfigError, StoreError
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

_STALE_ETAG = '"00000000000000000000000000000000"'


def check_conditional_writes(store: Store) -> None:
    """Probe ``store`` with a scratch object; raise ConfigError if conditional writes are not
    enforced, and set ``store.supports_conditional_delete`` from what the store does."""
    key = keys.selftest_key(uuid.uuid4().hex)
    required = (
        f"{store.url} does not enforce conditional writes, which bucketdigest requires (a store "
        "that ignores them can run with --claims optimistic: docs/protocol.md)"
    )
    etag = store.put_if_absent(key, b"first")
    if etag is None:
        raise ConfigError(f"{required}: a create of a fresh scratch key was refused")
    try:
        if store.put_if_absent(key, b"second") is not None:
            raise ConfigError(f"{required}: a second If-None-Match create was accepted")
        if store.put_if_match(key, b"third", _STALE_ETAG) is not None:
            raise ConfigError(f"{required}: an If-Match with a stale ETag was accepted")
        etag = store.put_if_match(key, b"fourth", etag)
        if etag is None:
            raise ConfigError(f"{required}: an If-Match with the current ETag was refused")
        try:
            ignored = store.delete(key, if_match=_STALE_ETAG) or store.head(key) is None
        except StoreError:
            ignored = True
        store.supports_conditional_delete = not ignored
        if ignored:
            log.warning(
                "%s ignores If-Match on DELETE; using compare-then-delete (docs/protocol.md)",
                store.url,
            )
    finally:
        store.delete(key)
