"""The bucket's tokens (``bucketdigest tokens add/ls/revoke``), stored hashed in the bucket and
revocable at once, each with its scopes:

- ``work``: a worker without bucket credentials, working through a broker (``serve
  --broker``). A token's id (the first 12 hex digits of its hash) starts the id of every
  worker that uses it, which is how the broker knows the claims a token holds.
- ``read``: searching and reading through ``serve --require-token`` (the web page, the API,
  MCP, the drop-in conversion APIs);
- ``upload`` (sending documents in, with ``read``) and ``write`` (retry, reprocess, settings;
  with ``read`` and ``upload``).

A token does only what its scopes name: a work token reads nothing through ``serve``, a read
token claims no job."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from bucketdigest.shared import keys
from bucketdigest.shared.errors import ConfigError, CorruptRecord, NotFound
from bucketdigest.shared.records import JsonRecord
from bucketdigest.shared.store import Store

TOKEN_PREFIX = "bdw_"
"""What every token starts with (so a leaked one is recognisable)."""


class Scope(StrEnum):
    WORK = "work"
    READ = "read"
    WRITE = "write"
    UPLOAD = "upload"


DEFAULT_WORKERS = 4
"""Claims a work token may hold at once unless made with ``--workers``."""

IMPLIED = {Scope.WRITE: {Scope.READ, Scope.UPLOAD}, Scope.UPLOAD: {Scope.READ}}
"""What a scope includes besides itself."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class AccessToken(JsonRecord):
    """``broker/tokens/<hash>.json``."""

    name: str
    token_id: str
    created_at: datetime
    revoked_at: datetime | None = None
    scopes: tuple[Scope, ...] = (Scope.WORK,)
    """What it may do (tokens made before scopes were work tokens)."""
    workers: int = DEFAULT_WORKERS
    """With ``work``: the claims it may hold at once through the broker (its workers)."""

    def allows(self, scope: Scope) -> bool:
        return any(scope is held or scope in IMPLIED.get(held, ()) for held in self.scopes)

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


def add_token(
    store: Store,
    name: str,
    scopes: tuple[Scope, ...] = (Scope.WORK,),
    workers: int = DEFAULT_WORKERS,
) -> tuple[str, AccessToken]:
    """A new token ``name`` with ``scopes``: the token (shown once, never stored) and its
    record. ConfigError for a name that is not a plain word or is taken by a live token."""
    if workers < 1:
        raise ConfigError(f"a token's workers are 1 or more, not {workers}")
    if not scopes:
        raise ConfigError("a token needs a scope: " + ", ".join(s.value for s in Scope))
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{name!r} is not a token name (letters, digits, . _ @ -; 64 at most)")
    if any(t.name == name and t.revoked_at is None for t in list_tokens(store)):
        raise ConfigError(f"a live token is named {name!r}: revoke it first or choose another")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = AccessToken(
        name=name,
        token_id=token_id(token),
        created_at=store.now(),
        scopes=tuple(scopes),
        workers=workers,
    )
    store.put(keys.broker_token_key(token_hash(token)), record.to_json())
    return token, record


def list_tokens(store: Store) -> list[AccessToken]:
    found = []
    for info in store.list(keys.BROKER_TOKENS_PREFIX):
        try:
            found.append(AccessToken.from_json(store.get(info.key).data))
        except (NotFound, CorruptRecord):
            continue
    return sorted(found, key=lambda t: t.created_at)


def revoke_token(store: Store, name_or_id: str) -> AccessToken:
    """Revoke the live token named ``name_or_id`` (or with that id): it is refused from its
    next request, and a claim it held expires like any lost worker's."""
    for info in store.list(keys.BROKER_TOKENS_PREFIX):
        found = store.get(info.key)
        record = AccessToken.from_json(found.data)
        if record.revoked_at is None and name_or_id in (record.name, record.token_id):
            revoked = replace(record, revoked_at=store.now())
            store.put(info.key, revoked.to_json())
            return revoked
    raise ConfigError(f"no live token is named {name_or_id!r} (bucketdigest tokens ls)")


def verify_token(store: Store, token: str, scope: Scope) -> AccessToken | None:
    """The live token ``token`` is, if it allows ``scope``; None otherwise (unknown, revoked,
    or for something else). One GET, so a revocation holds from the next request."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    try:
        record = AccessToken.from_json(store.get(keys.broker_token_key(token_hash(token))).data)
    except (NotFound, CorruptRecord):
        return None
    return record if record.revoked_at is None and record.allows(scope) else None
