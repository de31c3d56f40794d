"""Events: a signed JSON POST to the bucket's event endpoints when a document is done, fails
for good or is removed, so users act on it (index it elsewhere, notify someone) without polling.

Delivery is at least once and never holds up the queue. The process that made the change
first writes the event to ``events/pending/<id>.json`` (it survives that process), then sends
it from a background thread (:class:`Outbox`); what is not delivered stays pending and the
monitor duty of every worker, or ``bucketdigest monitor``, sends it again with backoff
(:func:`drain_events`), each drainer taking a pending event by a conditional write so two do
not send it at once. An event still undelivered after ``MAX_DELIVERIES`` goes to
``events/undeliverable/`` (``status`` counts them), never deleted.

The request follows the Standard Webhooks convention: headers ``webhook-id`` (the event's id,
the same for every delivery of one event: the receiver's idempotency key), ``webhook-timestamp``
(Unix seconds) and, with a secret, ``webhook-signature: v1,<base64 HMAC-SHA256 of
"{id}.{timestamp}.{body}">``. A secret is ``whsec_<base64>`` and the HMAC key is the bytes the
base64 decodes to, as the spec's libraries take it (``standardwebhooks.Webhook("whsec_...")``).
While a secret is being rotated, each event carries a signature by the new and by the old
(space-separated), so a receiver holding either verifies. The secrets live in
``secrets/events.json`` (``shared/bucket_settings.py``), which only the signing roles read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import urlsplit

from bucketdigest.shared import keys
from bucketdigest.shared.errors import ConfigError, CorruptRecord, NotFound
from bucketdigest.shared.records import JsonRecord, OutputRecord
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

SEND_TIMEOUT = 10.0
"""Seconds one delivery may take."""
RETRY_SECONDS = 30.0
"""Backoff before the second delivery; it doubles after, up to ``MAX_BACKOFF``."""
MAX_BACKOFF = 3600.0
MAX_DELIVERIES = 20
"""Deliveries of one event before it is set aside as undeliverable (about a day of backoff)."""
SENDER_GRACE = 60.0
"""A pending event its sender has not updated in this long is the drainers' (the sender
died)."""


class EventType(StrEnum):
    DONE = "document.done"
    FAILED = "document.failed"
    """Dead-lettered: out of attempts, or its input unusable."""
    REMOVED = "document.removed"


@dataclass(frozen=True)
class Event(JsonRecord):
    """What a receiver gets (the POST's JSON body)."""

    id: str
    type: EventType
    digest: str
    names: tuple[str, ...]
    state: str
    """``done``, ``failed`` or ``removed``."""
    time: datetime
    result_key: str | None = None
    """``store/out/<hash>.zip`` of a done document."""
    outputs: dict[str, str] = field(default_factory=dict)
    """Each of the chain's outputs and its status, as its result or failure holds them."""
    error: str = ""

    def body(self) -> bytes:
        data = json.loads(self.to_json())
        data.pop("schema_version", None)
        return json.dumps(data, sort_keys=True, ensure_ascii=False).encode()


def document_event(
    event_type: EventType,
    digest: str,
    names: tuple[str, ...],
    now: datetime,
    instance: str,
    *,
    outputs: Iterable[OutputRecord] = (),
    error: str = "",
) -> Event:
    """The event of one change to a document (``instance`` tells one such change from the
    next: a result's ETag, a failure's attempt)."""
    state = {EventType.DONE: "done", EventType.FAILED: "failed", EventType.REMOVED: "removed"}
    return Event(
        id=event_id(digest, event_type, instance),
        type=event_type,
        digest=digest,
        names=names,
        state=state[event_type],
        time=now,
        result_key=keys.out_key(digest) if event_type is EventType.DONE else None,
        outputs={r.output: r.status.value for r in outputs},
        error=error,
    )


def event_id(digest: str, event_type: EventType, instance: str) -> str:
    """The same id for every report of one change (its idempotency key): the document, what
    happened and which instance of it (a result's ETag, a failure's attempt)."""
    return hashlib.sha256(f"{digest}:{event_type}:{instance}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class PendingEvent(JsonRecord):
    """``events/pending/<id>.json``: an event and the endpoints it has yet to reach."""

    event: Event
    endpoints: tuple[str, ...]
    deliveries: int = 0
    next_at: datetime | None = None
    """When a drainer may send it (None: its sender is on it, for ``SENDER_GRACE``)."""
    last_error: str = ""


@dataclass(frozen=True)
class Webhooks:
    """Where events go (the bucket's ``events`` setting) and the secrets that sign them (the
    new one first while one is rotated out)."""

    endpoints: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()


SECRET_PREFIX = "whsec_"
MIN_SECRET_BYTES = 24
"""The shortest key a secret may decode to (the spec's libraries make 24 to 64 bytes)."""


def new_secret() -> str:
    """A fresh secret in the spec's form: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(os.urandom(32)).decode()


def _decoded(secret: str) -> bytes | None:
    """The key a ``whsec_`` secret holds (its base64, padded or not); None if it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    text = secret.removeprefix(SECRET_PREFIX)
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None


def check_secret(secret: str) -> str:
    """``secret`` if it is ``whsec_<base64 of 24 bytes or more>``; ConfigError otherwise."""
    key = _decoded(secret)
    if key is None or len(key) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"an events secret is {SECRET_PREFIX}<base64 of {MIN_SECRET_BYTES} bytes or more> "
            "(or `new` for one made for you)"
        )
    return secret


def signing_key(secret: str) -> bytes:
    """The HMAC key of ``secret``: the bytes after ``whsec_`` decode to. A secret set before
    secrets took that form (any text) signs with its UTF-8 bytes, as it always did."""
    key = _decoded(secret)
    return secret.encode() if key is None else key


def allowed_endpoint(url: str, hooks: Webhooks) -> bool:
    """Whether a pending event may be sent to ``url``: one of the bucket's endpoints now, and
    a scheme we send to. A record in the bucket is untrusted: it names no other target."""
    try:
        check_endpoint(url)
    except ConfigError:
        return False
    return url in hooks.endpoints


def check_endpoint(url: str) -> str:
    """An endpoint must be HTTPS (plain HTTP only to this machine: a local receiver)."""
    parts = urlsplit(url)
    local = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme == "https" or (parts.scheme == "http" and local):
        return url
    raise ConfigError(f"event endpoint {url!r} is not an https:// URL")


def _headers(event: Event, body: bytes, secrets: tuple[str, ...], now: datetime) -> dict[str, str]:
    stamp = str(int(now.timestamp()))
    headers = {
        "content-type": "application/json",
        "user-agent": "bucketdigest-events",
        "webhook-id": event.id,
        "webhook-timestamp": stamp,
    }
    if secrets:
        signed = f"{event.id}.{stamp}.".encode() + body
        headers["webhook-signature"] = " ".join(
            "v1,"
            + base64.b64encode(hmac.new(signing_key(s), signed, hashlib.sha256).digest()).decode()
            for s in secrets
        )
    return headers


class _Refused(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the 3xx is the answer: an event is not carried elsewhere


_NO_REDIRECTS = urllib.request.build_opener(_Refused())


def send(event: Event, endpoint: str, secrets: tuple[str, ...], now: datetime) -> str | None:
    """POST ``event`` to ``endpoint``; None when it answered 2xx, else why not. Redirects are
    not followed (a signed event goes to the endpoint configured, nowhere else)."""
    body = event.body()
    request = urllib.request.Request(
        endpoint, data=body, headers=_headers(event, body, secrets, now), method="POST"
    )
    try:
        with _NO_REDIRECTS.open(request, timeout=SEND_TIMEOUT) as answer:
            return None if 200 <= answer.status < 300 else f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"


def backoff(deliveries: int) -> timedelta:
    return timedelta(seconds=min(MAX_BACKOFF, RETRY_SECONDS * 2 ** max(deliveries - 1, 0)))


def _deliver(
    store: Store,
    pending: PendingEvent,
    hooks: Webhooks,
    etag: str,
    down: dict[str, str] | None = None,
) -> str:
    """Send ``pending`` to the endpoints it has yet to reach, then delete it (all reached),
    set it aside (out of deliveries, or naming no endpoint the bucket has) or write when to
    try again. Endpoints in ``down`` (failed earlier in this pass) are not tried again now,
    and those that fail are added to it. Returns what became of it."""
    now = store.now()
    down = {} if down is None else down
    failed = {}
    refused = [url for url in pending.endpoints if not allowed_endpoint(url, hooks)]
    for endpoint in pending.endpoints:
        if endpoint in refused:
            continue
        error = down.get(endpoint) or send(pending.event, endpoint, hooks.secrets, now)
        if error is not None:
            failed[endpoint] = down[endpoint] = error
    key = keys.event_key(keys.EventState.PENDING, pending.event.id)
    if refused:
        log.error("event %s names endpoints the bucket does not have: %s",
                  pending.event.id, ", ".join(refused[:3]))  # fmt: skip
    if not failed and not refused:
        store.delete(key, if_match=etag)
        return "delivered"
    deliveries = pending.deliveries + 1
    left = replace(
        pending,
        endpoints=tuple(failed) + tuple(refused),
        deliveries=deliveries,
        next_at=now + backoff(deliveries),
        last_error="; ".join(
            [f"{url}: {error}" for url, error in failed.items()]
            + [f"{url}: not one of the bucket's event endpoints" for url in refused]
        ),
    )
    if deliveries >= MAX_DELIVERIES or (refused and not failed):
        store.put(keys.event_key(keys.EventState.UNDELIVERABLE, pending.event.id), left.to_json())
        store.delete(key, if_match=etag)
        log.error("event %s undeliverable: %s", pending.event.id, left.last_error)
        return "undeliverable"
    store.put_if_match(key, left.to_json(), etag)
    return "retrying"


def record_event(store: Store, event: Event, hooks: Webhooks) -> tuple[PendingEvent, str] | None:
    """Write ``event`` as pending (once: a second report of the same change is not written
    again); the record and its ETag, None when there is nowhere to send it or it is pending
    already."""
    if not hooks.endpoints:
        return None
    pending = PendingEvent(event, hooks.endpoints)
    etag = store.put_if_absent(keys.event_key(keys.EventState.PENDING, event.id), pending.to_json())
    return None if etag is None else (pending, etag)


class Outbox:
    """A process's sender: records each event in the bucket, then delivers it from a
    background thread, so a slow receiver never holds up a job."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="events")
        self._sending: list[Future[str]] = []

    def announce(self, event: Event, hooks: Webhooks) -> None:
        try:
            recorded = record_event(self.store, event, hooks)
        except Exception:
            log.exception("could not record event %s for %s", event.type, event.digest)
            return
        if recorded is not None:
            self._send(*recorded, hooks)

    def send_recorded(self, event: Event, hooks: Webhooks) -> None:
        """Send ``event``, recorded before its change was made (a removal), now that it is."""
        try:
            found = self.store.get(keys.event_key(keys.EventState.PENDING, event.id))
            pending = PendingEvent.from_json(found.data)
        except (NotFound, CorruptRecord):
            return
        self._send(pending, found.etag, hooks)

    def _send(self, pending: PendingEvent, etag: str, hooks: Webhooks) -> None:
        self._sending.append(self._threads.submit(_deliver, self.store, pending, hooks, etag))
        self._sending = [f for f in self._sending if not f.done()]

    def close(self, wait: float = SEND_TIMEOUT) -> None:
        """Give the deliveries under way ``wait`` seconds; what is left stays pending."""
        for future in list(self._sending):
            try:
                future.result(timeout=wait)
            except Exception:
                log.warning("an event delivery did not finish; it stays pending")
        self._threads.shutdown(wait=False, cancel_futures=True)


@dataclass
class DrainReport:
    """What one drain did: events delivered, left to retry, given up on (and each one's)."""

    delivered: int = 0
    retrying: int = 0
    undeliverable: int = 0
    outcomes: dict[str, str] = field(default_factory=dict)


def _due(pending: PendingEvent, modified: datetime, now: datetime) -> bool:
    if pending.next_at is None:  # its sender's, unless it has gone quiet
        return now - modified >= timedelta(seconds=SENDER_GRACE)
    return pending.next_at <= now


def _happened(store: Store, event: Event) -> bool | None:
    """Whether the change ``event`` reports has happened: a removal is recorded before the
    document's objects go, under the purge's hold. None: not yet (the hold is on)."""
    if event.type is not EventType.REMOVED or store.head(keys.out_key(event.digest)) is None:
        return True
    held = store.head(keys.queue_key(keys.QueueState.PROCESSING, event.digest)) is not None
    return None if held else False


def drain_events(store: Store, webhooks: Callable[[], Webhooks], limit: int = 100) -> DrainReport:
    """The monitor duty: deliver pending events that are due (their sender died, or their
    backoff passed), at most ``limit`` a pass, the longest untouched first (a record is
    rewritten at each delivery, so that is the order they fall due in). An endpoint that
    fails is not tried again in the same pass, so events backing off for a dead endpoint never
    hide those for a live one. ``webhooks()`` (the bucket's settings) is asked only when
    something is pending: a pass over none costs one LIST."""
    report = DrainReport()
    now = store.now()
    listed = sorted(
        store.list(keys.event_prefix(keys.EventState.PENDING)),
        key=lambda info: (info.last_modified, info.key),
    )
    hooks = webhooks() if listed else Webhooks()
    if not hooks.endpoints:  # events were switched off: what is pending waits
        return report
    down: dict[str, str] = {}
    for info in listed:
        if len(report.outcomes) >= limit:
            break
        try:
            found = store.get(info.key)
            pending = PendingEvent.from_json(found.data)
        except NotFound:
            continue
        except CorruptRecord as exc:
            log.error("%s: %s; left for a person to read", info.key, exc)
            continue
        if not _due(pending, info.last_modified, now):
            continue
        if (happened := _happened(store, pending.event)) is not True:
            if happened is False:  # its removal never happened (the purge stopped first)
                store.delete(info.key, if_match=found.etag)
            continue
        if all(url in down for url in pending.endpoints):
            continue  # every endpoint it waits for failed in this pass: later
        # take it: a drainer elsewhere that read the same version loses the conditional write
        taken = replace(pending, next_at=now + timedelta(seconds=SEND_TIMEOUT * 3))
        etag = store.put_if_match(info.key, taken.to_json(), found.etag)
        if etag is None:
            continue
        outcome = _deliver(store, pending, hooks, etag, down)
        report.outcomes[pending.event.id] = outcome
        setattr(report, outcome, getattr(report, outcome) + 1)
    return report
