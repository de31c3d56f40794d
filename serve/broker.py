"""The broker (``bucketdigest serve --broker``): workers without bucket credentials work
through it, each with its own token (``bucketdigest tokens``).

It holds the bucket credentials and lets a worker do, one claim at a time, exactly what a
credentialed worker does to that claim's objects, and nothing else:

- ``POST /broker/v1/claim`` claims the next job for the worker (its id must start with its
  token's prefix, so every claim names the token that holds it);
- ``POST /broker/v1/op`` runs one small store request (a marker, a checkpoint record, a HEAD, a
  LIST of the claim's own ``work/`` folder) for the worker, the same fenced conditional writes
  as ever;
- ``POST /broker/v1/sign`` returns a presigned URL (5 minutes) for a large transfer: the source,
  a checkpoint bundle, the result, with its ``If-None-Match`` / ``If-Match`` signed in.

Every request of ``op`` and ``sign`` names the claim it is for; the broker reads that claim's
processing marker and refuses the request unless the marker is held by a worker of the token,
and the key belongs to the claim (its source, its result, its ``work/`` folder, its markers,
the result of the document it supersedes, read only). The settings a worker reads come without
the event endpoints: when a brokered worker ends a claim (the processing marker deleted through
``op``), the broker records and sends the event itself, with the secret the worker never sees.
A revoked token is refused at its next request; the claim it held expires and the monitor
requeues it as for any lost worker.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from bucketdigest.shared import keys, queue
from bucketdigest.shared.attempts import LEASE_SECONDS
from bucketdigest.shared.bucket_settings import bucket_webhooks, read_settings
from bucketdigest.shared.clock import format_time
from bucketdigest.shared.errors import ConfigError, CorruptRecord, InvalidKey, NotFound
from bucketdigest.shared.events import Outbox
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.policy import CLAIM_REQUESTS
from bucketdigest.shared.queue.choosing import claim_next
from bucketdigest.shared.queue.vetting import vet_failure, vet_renewal, vet_ticket
from bucketdigest.shared.records import Claim, Failure, Ticket
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.tokens import AccessToken, Scope, verify_token

router = APIRouter(prefix="/broker/v1", include_in_schema=False)
_bearer = HTTPBearer(auto_error=False)

SIGNED_SECONDS = 300
"""How long a presigned URL lasts: a revoked worker keeps at most this long what it was given."""

Op = Literal["get", "head", "list", "put", "put_if_absent", "put_if_match", "delete", "delete_many"]
_READS = {"get", "head", "list"}


class OpRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Op
    claim: str | None = Field(default=None, description="the document whose claim it is for")
    key: str = ""
    keys: list[str] = Field(default_factory=list, max_length=1000)
    data: str | None = Field(default=None, description="base64, for writes")
    etag: str | None = None
    start_after: str = ""
    limit: int | None = Field(default=None, ge=1, le=1000)


class SignRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["GET", "PUT"]
    claim: str
    key: str
    if_none_match: bool = False
    if_match: str | None = None


class ClaimRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    worker_id: str = Field(max_length=200)
    lease_seconds: float = Field(gt=0, le=86_400)


@dataclass(frozen=True)
class Broker:
    """The broker's bucket and its event sender. A token is checked against the bucket at
    every request (one GET), so a revocation holds from the next request on."""

    store: Store
    outbox: Outbox


def _broker(request: Request) -> Broker:
    broker = getattr(request.app.state, "broker", None)
    if broker is None:
        raise HTTPException(404, "this server is not a broker (serve --broker)")
    return broker


BrokerDep = Annotated[Broker, Depends(_broker)]


def _worker_token(
    broker: BrokerDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> AccessToken:
    if credentials is None:
        raise HTTPException(401, "a worker token is needed (bucketdigest tokens add NAME)")
    token = verify_token(broker.store, credentials.credentials, Scope.WORK)
    if token is None:
        raise HTTPException(403, "this token is unknown, revoked, or not a worker's")
    return token


TokenDep = Annotated[AccessToken, Depends(_worker_token)]


def _held_claim(store: Store, token: AccessToken, digest: str) -> Claim:
    """The claim on ``digest``, if a worker of ``token`` holds it; 403 otherwise."""
    try:
        claim = Claim.from_json(store.get(keys.queue_key(QueueState.PROCESSING, digest)).data)
    except (NotFound, CorruptRecord, ValueError):
        claim = None
    if claim is None or claim.hold or not claim.worker_id.startswith(token.worker_prefix):
        raise HTTPException(403, f"this token holds no claim on {digest[:12]}")
    return claim


def _claim_object(key: str) -> tuple[str, str] | None:
    """(its kind: a prefix of ``CLAIM_REQUESTS``, the document) for the keys a claim may
    touch; None for others."""
    try:
        if key.startswith(keys.RAW_PREFIX):
            return keys.RAW_PREFIX, keys.parse_raw_key(key)[0]
        if key.startswith(keys.OUT_PREFIX):
            return keys.OUT_PREFIX, keys.parse_out_key(key)
        if key.startswith(keys.WORK_PREFIX):
            return keys.WORK_PREFIX, keys.parse_work_digest(key)
        if key.startswith(keys.QUEUE_PREFIX):
            state, digest = keys.parse_queue_key(key)
            return (keys.TODO_LANES_PREFIX if state is QueueState.TODO else state.prefix), digest
    except ValueError:
        return None
    return None


def _checked_key(key: str, *, prefix: bool = False) -> str:
    try:
        return keys.check_key(key, prefix=prefix)
    except InvalidKey as exc:
        raise HTTPException(400, str(exc)) from None


def _check_scope(
    store: Store, token: AccessToken, op: str, key: str, claim: str | None, *, signed: bool = False
) -> Claim | None:
    """403 unless ``op`` on ``key`` is something the claim ``claim`` needs; the claim as read
    (None for the requests that need none). ``signed``: a presigned transfer, which never
    reaches the settings, and writes only the claim's result or checkpoint bundles."""
    _checked_key(key, prefix=op == "list")
    if key == keys.SETTINGS_KEY and op in ("get", "head") and not signed:
        return None  # read through op, without the event endpoints
    if key.startswith(keys.WORKERS_PREFIX) and not signed:  # a worker's own waiting note
        if key.removeprefix(keys.WORKERS_PREFIX).startswith(token.worker_prefix):
            return None
        raise HTTPException(403, "a worker writes only its own note")
    found = _claim_object(key)
    if found is None or claim is None:
        raise HTTPException(403, f"{key} is not an object of a claim")
    kind, digest = found
    held = _held_claim(store, token, claim)
    if digest == claim:
        bundles = signed and kind in (keys.OUT_PREFIX, keys.WORK_PREFIX)
        allowed = CLAIM_REQUESTS[kind] | ({"put"} if bundles else set())
        if op in allowed and not (signed and kind.startswith(keys.QUEUE_PREFIX)):
            return held
    elif kind == keys.OUT_PREFIX and digest == held.ticket.supersedes and op in _READS:
        return held  # the previous revision's result, which the chain reads
    raise HTTPException(403, f"{op} of {key} is not something the claim on {claim[:12]} needs")


def _lease_limit(store: Store) -> float:
    return read_settings(store)[0].lease_seconds or LEASE_SECONDS


def _vet_write(store: Store, held: Claim, op: str, key: str, data: bytes) -> None:
    """422 unless a marker written is the transition the claim ``held`` allows."""
    if not key.startswith(keys.QUEUE_PREFIX):
        return
    state = keys.parse_queue_key(key)[0]
    try:
        if state is QueueState.PROCESSING:
            why = vet_renewal(held, Claim.from_json(data), store.now(), _lease_limit(store))
        elif state is QueueState.TODO:
            ticket = Ticket.from_json(data)
            why = vet_ticket(held, ticket)
            lane = keys.queue_key(QueueState.TODO, held.ticket.digest, ticket.priority)
            if why is None and key != lane:
                why = "a ticket goes back to its own lane"
        else:
            why = vet_failure(held, Failure.from_json(data))
    except CorruptRecord as exc:
        why = str(exc)
    if why is not None:
        raise HTTPException(422, f"{key}: refused: {why}")


def _info(found: ObjectInfo | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "key": found.key,
        "size": found.size,
        "etag": found.etag,
        "last_modified": format_time(found.last_modified),
    }


def _bytes(request: OpRequest) -> bytes:
    if request.data is None:
        raise HTTPException(422, f"{request.op} needs data")
    try:
        return base64.b64decode(request.data, validate=True)
    except ValueError:
        raise HTTPException(422, f"{request.op}: data is not base64") from None


def _settings_for_workers(data: bytes) -> bytes:
    """The bucket's settings as a brokered worker reads them: without the event endpoints and
    secret (the broker sends a brokered worker's events)."""
    settings = json.loads(data)
    settings["events"] = settings["events_secret"] = None
    return json.dumps(settings).encode()


def _claim_ending(broker: Broker, held: Claim) -> None:
    """Before a brokered worker's claim is dropped, the document's end is recorded and sent
    (done, or failed for good at this attempt), as a credentialed worker's transition does:
    so a crash after the drop cannot lose it. Nothing when the job went back in line."""
    store, digest = broker.store, held.ticket.digest
    hooks = bucket_webhooks(store)
    if not hooks.endpoints or queue.todo_marker(store, digest) is not None:
        return
    failure = queue.read_failure(store, digest)
    if failure is not None and failure.ticket.attempt == held.ticket.attempt:
        event = queue.failed_event(failure)
    else:
        event = queue.done_event(store, digest, held.ticket.names)
    if event is not None:
        broker.outbox.announce(event, hooks)


def _claim_ended(broker: Broker, token: AccessToken, digest: str) -> None:
    """A brokered worker ended its claim: its note goes, and a dead-lettered document's
    scratch (``work/``), which the worker may no longer touch."""
    store = broker.store
    store.delete(keys.broker_claim_key(token.token_id, digest))
    if queue.todo_marker(store, digest) is None and queue.read_failure(store, digest) is not None:
        store.delete_many([info.key for info in store.list(keys.work_prefix(digest))])


def _claims_held(store: Store, token: AccessToken) -> int:
    """How many claims ``token``'s workers hold: its notes in ``broker/claims/`` (one LIST),
    those whose claim has ended without the broker seeing it (a worker that died, a claim the
    monitor requeued) dropped first when they would refuse a claim."""
    notes = [i.key for i in store.list(keys.broker_claims_prefix(token.token_id))]
    if len(notes) < token.workers:
        return len(notes)
    stale = []
    for note in notes:
        digest = keys.parse_broker_claim_key(note)
        try:
            claim = Claim.from_json(store.get(keys.queue_key(QueueState.PROCESSING, digest)).data)
        except (NotFound, CorruptRecord):
            claim = None
        if claim is None or not claim.worker_id.startswith(token.worker_prefix):
            stale.append(note)
    if stale:
        store.delete_many(stale)
    return len(notes) - len(stale)


@router.post("/claim")
def claim(request: ClaimRequest, broker: BrokerDep, token: TokenDep) -> dict[str, Any]:
    """Claim the next job for the worker ``worker_id`` (one of this token's)."""
    if not request.worker_id.startswith(token.worker_prefix):
        raise HTTPException(403, f"a worker of this token has an id starting {token.worker_prefix}")
    if request.lease_seconds > (limit := _lease_limit(broker.store)):
        raise HTTPException(
            422, f"a lease may last at most the bucket's lease_seconds ({limit:g} s)"
        )
    now = format_time(broker.store.now())
    if _claims_held(broker.store, token) >= token.workers:  # no job until one of them ends
        refused = f"this token holds its {token.workers} claims already (tokens add --workers N)"
        return {"job": None, "deferred": True, "refused": refused, "now": now}
    found = claim_next(broker.store, request.worker_id, request.lease_seconds)
    job = found.job
    if job is not None:
        broker.store.put(keys.broker_claim_key(token.token_id, job.digest), b"")
    return {
        "job": None
        if job is None
        else {"claim": json.loads(job.claim.to_json()), "etag": job.etag},
        "deferred": found.deferred,
        "now": format_time(broker.store.now()),
    }


@router.post("/op")
def operate(request: OpRequest, broker: BrokerDep, token: TokenDep) -> dict[str, Any]:
    """One store request of the claim ``claim``, by the broker's credentials."""
    store = broker.store
    op, key = request.op, request.key
    targets = request.keys if op == "delete_many" else [key]
    held = None
    for target in targets:
        held = _check_scope(store, token, op, target, request.claim)
    written = _bytes(request) if op in ("put", "put_if_absent", "put_if_match") else b""
    if held is not None and op in ("put", "put_if_absent", "put_if_match"):
        _vet_write(store, held, op, key, written)
    if op == "delete" and key.startswith(keys.QUEUE_PREFIX) and request.etag is None:
        raise HTTPException(422, "a claim is dropped only at the version held (etag)")
    answer: dict[str, Any] = {"now": format_time(store.now())}
    if op == "get":
        try:
            found = store.get(key)
        except NotFound:
            raise HTTPException(404, f"{key} not found") from None
        data = _settings_for_workers(found.data) if key == keys.SETTINGS_KEY else found.data
        answer |= {
            "data": base64.b64encode(data).decode(),
            "etag": found.etag,
            "last_modified": format_time(found.last_modified),
        }
    elif op == "head":
        answer["info"] = _info(store.head(key))
    elif op == "list":
        listed = store.list(key, request.start_after, request.limit)
        answer["items"] = [_info(info) for info in listed]
    elif op == "put":
        answer["etag"] = store.put(key, written)
    elif op == "put_if_absent":
        answer["etag"] = store.put_if_absent(key, written)
    elif op == "put_if_match":
        if request.etag is None:
            raise HTTPException(422, "put_if_match needs etag")
        answer["etag"] = store.put_if_match(key, written, request.etag)
    elif op == "delete":
        ended = held is not None and key == keys.queue_key(
            QueueState.PROCESSING, held.ticket.digest
        )
        if ended and held is not None and store.head(key) is not None:
            _claim_ending(broker, held)
        answer["deleted"] = store.delete(key, if_match=request.etag)
        if ended and answer["deleted"] and request.claim is not None:
            _claim_ended(broker, token, request.claim)
    elif op == "delete_many":
        store.delete_many(request.keys)
    return answer


@router.post("/sign")
def sign(request: SignRequest, broker: BrokerDep, token: TokenDep) -> dict[str, Any]:
    """A presigned URL for one large transfer of the claim ``claim``, and the headers its
    request must carry."""
    op = "get" if request.method == "GET" else "put"
    _check_scope(broker.store, token, op, request.key, request.claim, signed=True)
    conditional = request.if_none_match or request.if_match
    if op == "put" and request.key.startswith(keys.OUT_PREFIX) and not conditional:
        raise HTTPException(422, "a result is written as a new one or over the version read")
    conditions = {}
    if request.if_none_match:
        conditions["If-None-Match"] = "*"
    if request.if_match:
        conditions["If-Match"] = request.if_match
    presign = getattr(_unwrapped(broker.store), "presign", None)
    if presign is None:
        raise HTTPException(501, "this bucket cannot presign URLs: the broker needs an S3 bucket")
    url = presign(request.method, request.key, conditions, SIGNED_SECONDS)
    return {"url": url, "headers": conditions, "now": format_time(broker.store.now())}


def _unwrapped(store: Store) -> Store:
    while isinstance(store, CountingStore):
        store = store.inner
    return store


def broker_for(store: Store) -> Broker:
    """The broker of ``store``; ConfigError unless it can presign URLs (an S3 bucket)."""
    if getattr(_unwrapped(store), "presign", None) is None:
        raise ConfigError(f"{store.url} cannot presign URLs: serve --broker needs an s3:// bucket")
    return Broker(store, Outbox(store))
