"""The tokens of workers that have no bucket credentials and work through a broker
(``bucketdigest tokens add/ls/revoke``): one per worker, stored hashed in the bucket, revocable
at once. A token's id (the first 12 hex digits of its hash) starts the id of every worker that
uses it, which is how the broker knows the claims a token holds."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, replace
from datetime import datetime

from bucketdigest.shared import keys
from bucketdigest.shared.errors import ConfigError, CorruptRecord, NotFound
from bucketdigest.shared.records import JsonRecord
from bucketdigest.shared.store import Store

TOKEN_PREFIX = "bdw_"
"""What every worker token starts with (so a leaked one is recognisable)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class WorkerToken(JsonRecord):
    """``broker/tokens/<hash>.json``."""

    name: str
    token_id: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def worker_prefix(self) -> str:
        """What the id of every worker using this token starts with."""
        return worker_prefix(self.token_id)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_id(token: str) -> str:
    return token_hash(token)[:12]


def worker_prefix(token_identifier: str) -> str:
    return f"t{token_identifier}-"


def add_token(store: Store, name: str) -> tuple[str, WorkerToken]:
    """A new token for the worker ``name``: the token (shown once, never stored) and its
    record. ConfigError for a name that is not a plain word or is taken by a live token."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{name!r} is not a token name (letters, digits, . _ @ -; 64 at most)")
    if any(t.name == name and t.revoked_at is None for t in list_tokens(store)):
        raise ConfigError(f"a live token is named {name!r}: revoke it first or choose another")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = WorkerToken(name=name, token_id=token_id(token), created_at=store.now())
    store.put(keys.broker_token_key(token_hash(token)), record.to_json())
    return token, record


def list_tokens(store: Store) -> list[WorkerToken]:
    found = []
    for info in store.list(keys.BROKER_TOKENS_PREFIX):
        try:
            found.append(WorkerToken.from_json(store.get(info.key).data))
        except (NotFound, CorruptRecord):
            continue
    return sorted(found, key=lambda t: t.created_at)


def revoke_token(store: Store, name_or_id: str) -> WorkerToken:
    """Revoke the live token named ``name_or_id`` (or with that id): the broker refuses it
    from its next request, and the claim it held expires like any lost worker's."""
    for info in store.list(keys.BROKER_TOKENS_PREFIX):
        found = store.get(info.key)
        record = WorkerToken.from_json(found.data)
        if record.revoked_at is None and name_or_id in (record.name, record.token_id):
            revoked = replace(record, revoked_at=store.now())
            store.put(info.key, revoked.to_json())
            return revoked
    raise ConfigError(f"no live token is named {name_or_id!r} (bucketdigest tokens ls)")


def verify_token(store: Store, token: str) -> WorkerToken | None:
    """The live token ``token`` is, or None (unknown or revoked)."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        record = WorkerToken.from_json(store.get(keys.broker_token_key(token_hash(token))).data)
    except (NotFound, CorruptRecord):
        return None
    return record if record.revoked_at is None else None
