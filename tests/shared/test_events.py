"""Events when a document finishes: every terminal document (done, failed for good, removed)
reaches a receiver that fails some deliveries at least once, signed, with one idempotency key
per change; what its sender could not deliver waits in the bucket for the monitor duty."""

from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.purge import remove_document
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import (
    bucket_webhooks,
    change_settings,
    read_settings,
    replace_settings,
)
from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.events import (
    SENDER_GRACE,
    Event,
    EventType,
    PendingEvent,
    Webhooks,
    document_event,
    drain_events,
    record_event,
    send,
)
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.clocks import MovableClock

SECRET = "whsec_" + base64.b64encode(b"a shared secret of 32 bytes here").decode()


OnPost = Callable[[BaseHTTPRequestHandler, dict[str, str], bytes], None]


def _endpoint(on_post: OnPost) -> tuple[ThreadingHTTPServer, str]:
    """A local HTTP endpoint calling ``on_post`` with each POST's headers (lower case) and
    body; the server and its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            on_post(self, {k.lower(): v for k, v in self.headers.items()}, body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/hooks"


class Receiver:
    """A local endpoint that answers 500 to the first delivery of every other event and
    drops the connection on the first delivery of another, keeping what it accepted."""

    def __init__(self) -> None:
        self.accepted: list[tuple[dict[str, str], bytes]] = []
        self.tries: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server, self.url = _endpoint(self._post)

    def _post(self, request: BaseHTTPRequestHandler, headers: dict[str, str], body: bytes) -> None:
        event_id = headers["webhook-id"]
        with self.lock:
            self.tries[event_id] += 1
            first = self.tries[event_id] == 1
            refuse = first and int(event_id, 16) % 2 == 0
            drop = first and not refuse and len(self.tries) == 2
        if drop:
            request.close_connection = True
            request.connection.close()
            return
        if not refuse:  # kept before it answers: the sender moves on at the answer
            with self.lock:
                self.accepted.append((headers, body))
        request.send_response(500 if refuse else 204)
        request.end_headers()

    def events(self) -> dict[str, list[dict]]:
        """What was accepted, by event id, each body checked against its signature."""
        found: dict[str, list[dict]] = defaultdict(list)
        for headers, body in self.accepted:
            # verified as the spec's library does (its clock check aside: the test's moves)
            stamp = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
            expected = Webhook(SECRET).sign(headers["webhook-id"], stamp, body.decode())
            assert expected in headers["webhook-signature"].split(" ")
            event = json.loads(body)
            assert event["id"] == headers["webhook-id"]
            found[event["id"]].append(event)
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.server.shutdown()


def _pending(store: LocalStore) -> list[str]:
    return [i.key for i in store.list(keys.event_prefix(keys.EventState.PENDING))]


def test_every_terminal_document_reaches_a_failing_receiver_at_least_once(
    tmp_path: Path, receiver: Receiver
) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path / "bucket", clock=clock)
    change_settings(
        store,
        {"events": [receiver.url], "events_secret": SECRET, "converter_mode": "legacy",
         "max_attempts": 1},
    )  # fmt: skip
    for n in range(3):
        make_pdf(tmp_path / "in" / f"good-{n}.pdf", title=f"Good {n}", pages=1, seed=n)
    (tmp_path / "in" / "broken.pdf").write_bytes(b"%PDF-1.7 not really a PDF")
    make_pdf(tmp_path / "lost" / "lost.pdf", title="Lost", pages=1, seed=9)
    ingested = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    digest_of = {Path(f.path).name: f.digest for f in ingested.files}
    lost = Ingestor(store).ingest([FolderSource(tmp_path / "lost", FileFilter())]).files[0].digest

    # a worker whose lease expires: the monitor dead-letters it and records the event
    assert queue.claim(store, lost, "lost-worker", 1.0).job is not None
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    clock.advance(60)
    assert sweep(store, MonitorSettings()).dead_lettered == [lost]
    removed = digest_of["good-0.pdf"]
    assert remove_document(store, removed).purged == (removed,)

    # what the senders could not deliver is pending; the monitor duty drains it with backoff
    assert _pending(store), "the receiver refused some first deliveries"
    webhooks = bucket_webhooks(store)
    for _ in range(6):
        clock.advance(max(SENDER_GRACE, 3600))
        drain_events(store, lambda: webhooks)
        if not _pending(store):
            break
    assert _pending(store) == []
    assert list(store.list(keys.event_prefix(keys.EventState.UNDELIVERABLE))) == []

    got = receiver.events()
    by_change = {(e[0]["digest"], e[0]["type"]) for e in got.values()}
    expected = {
        (digest_of["good-0.pdf"], "document.done"),
        (digest_of["good-1.pdf"], "document.done"),
        (digest_of["good-2.pdf"], "document.done"),
        (digest_of["broken.pdf"], "document.failed"),
        (lost, "document.failed"),
        (removed, "document.removed"),
    }
    assert by_change == expected
    for events in got.values():
        event = events[0]
        assert all(e == event for e in events), "a retry sends the same event"
        if event["type"] == "document.done":
            assert event["result_key"] == keys.out_key(event["digest"])
            assert event["outputs"]["markdown"] == "completed"
            assert event["names"] and event["state"] == "done"
        if event["digest"] == digest_of["broken.pdf"]:
            assert event["error"] and event["state"] == "failed"
    duplicates = sum(len(events) - 1 for events in got.values())
    retried = sum(1 for tries in receiver.tries.values() if tries > 1)
    assert retried >= 2, "some deliveries were refused and sent again"
    assert duplicates == 0, "an accepted event is not sent again"


def test_an_event_endpoint_must_be_https(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with pytest.raises(ConfigError, match="not an https:// URL"):
        change_settings(store, {"events": ["http://example.com/hooks"]})
    settings = change_settings(
        store, {"events": ["https://example.com/hooks"], "events_secret": SECRET}
    )
    assert settings.public()["events_secret"] == "(set)"


class Collector:
    """A receiver that accepts everything and keeps each request's headers and body."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.server, self.url = _endpoint(self._post)

    def _post(self, request: BaseHTTPRequestHandler, headers: dict[str, str], body: bytes) -> None:
        self.got.append((headers, body))
        request.send_response(204)
        request.end_headers()


@pytest.fixture
def collector() -> Iterator[Collector]:
    running = Collector()
    yield running
    running.server.shutdown()


def _dead_url() -> str:
    """An address where nothing listens: every delivery is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/hooks"


def _event(n: int, now: datetime) -> Event:
    return document_event(EventType.DONE, f"{n:064x}", (f"doc-{n}.pdf",), now, "etag")


def test_events_for_a_dead_endpoint_do_not_hide_those_for_a_live_one(
    tmp_path: Path, collector: Collector
) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path, clock=clock)
    dead = _dead_url()
    hooks = Webhooks((dead, collector.url), (SECRET,))
    for n in range(150):  # written first: the oldest, the first in line
        record_event(store, _event(n, clock()), replace(hooks, endpoints=(dead,)))
    clock.advance(1)
    live = set()
    for n in range(5):
        live.add(_event(1000 + n, clock()).id)
        record_event(store, _event(1000 + n, clock()), replace(hooks, endpoints=(collector.url,)))
    clock.advance(SENDER_GRACE)

    report = drain_events(store, lambda: hooks)

    assert {headers["webhook-id"] for headers, _ in collector.got} == live
    assert report.delivered == 5 and report.retrying == 1, "the dead endpoint was tried once"
    assert len(_pending(store)) == 150


def test_a_pending_event_names_only_the_buckets_endpoints(
    tmp_path: Path, collector: Collector
) -> None:
    """A pending record is bucket data anyone with write access could have made: an endpoint
    the bucket does not have (another host, a file:// URL) gets nothing, and the duty goes on."""
    clock = MovableClock()
    store = LocalStore(tmp_path, clock=clock)
    hooks = Webhooks((collector.url,), (SECRET,))
    poisoned = ["file:///etc/passwd", "https://attacker.example/steal", "gopher://x"]
    for n, url in enumerate(poisoned):
        record_event(store, _event(n, clock()), replace(hooks, endpoints=(url,)))
    record_event(store, _event(99, clock()), hooks)
    clock.advance(SENDER_GRACE)

    report = drain_events(store, lambda: hooks)

    assert report.undeliverable == 3 and report.delivered == 1
    assert len(collector.got) == 1
    set_aside = store.list(keys.event_prefix(keys.EventState.UNDELIVERABLE))
    for info in set_aside:
        assert (
            "not one of the bucket's event endpoints"
            in PendingEvent.from_json(store.get(info.key).data).last_error
        )


def test_while_a_secret_is_rotated_receivers_holding_either_verify(
    tmp_path: Path, collector: Collector
) -> None:
    store = LocalStore(tmp_path)
    change_settings(store, {"events": [collector.url], "events_secret": SECRET})
    newer = "whsec_" + base64.b64encode(b"the next secret, 32 bytes long!!").decode()
    change_settings(store, {"events_secret": newer})
    hooks = bucket_webhooks(store)
    assert hooks.secrets == (newer, SECRET)
    assert send(_event(1, store.now()), collector.url, hooks.secrets, store.now()) is None
    headers, body = collector.got[0]
    for secret in (newer, SECRET):  # as a receiver written from the library's README does
        assert Webhook(secret).verify(body, headers)["digest"] == f"{1:064x}"
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(body, headers)


def test_the_secret_shown_as_set_is_kept_and_lives_outside_the_settings(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    change_settings(store, {"events": ["https://example.com/h"], "events_secret": SECRET})
    assert SECRET not in store.get(keys.SETTINGS_KEY).data.decode()
    shown = read_settings(store)[0].public()
    assert shown["events_secret"] == "(set)"
    replace_settings(store, json.dumps(shown | {"max_attempts": 5}))  # config edit, PUT /api
    change_settings(store, {"events_secret": "(set)", "retry_delay": 1.0})
    assert bucket_webhooks(store).secrets == (SECRET,)
    with pytest.raises(ConfigError, match="whsec_"):
        change_settings(store, {"events_secret": "a password"})


def test_a_secret_from_an_older_bucket_moves_out_of_the_settings(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    old = {"schema_version": 1, "version": 1, "events": ["https://example.com/h"],
           "events_secret": "an old plain secret"}  # fmt: skip
    store.put(keys.SETTINGS_KEY, json.dumps(old).encode())
    assert bucket_webhooks(store).secrets == ("an old plain secret",), "it signs as before"
    change_settings(store, {"max_attempts": 4})
    assert "an old plain secret" not in store.get(keys.SETTINGS_KEY).data.decode()
    assert bucket_webhooks(store).secrets == ("an old plain secret",)


CRASH_POINTS = [
    ("put_if_absent", keys.OUT_PREFIX, "good.pdf"),  # the result written, nothing recorded yet
    ("put_if_absent", keys.EVENTS_PREFIX, "good.pdf"),  # its event recorded, the claim held
    ("put", keys.QUEUE_PREFIX + "failed/", "broken.pdf"),  # dead-lettered, nothing recorded
    ("put_if_absent", keys.EVENTS_PREFIX, "broken.pdf"),  # its event recorded, the claim held
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "prefix", "document"), CRASH_POINTS)
def test_a_worker_killed_at_any_point_of_a_jobs_end_loses_no_event(
    tmp_path: Path, collector: Collector, method: str, prefix: str, document: str
) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path / "bucket", clock=clock)
    change_settings(
        store,
        {"events": [collector.url], "events_secret": SECRET, "converter_mode": "legacy",
         "max_attempts": 1, "lease_seconds": 1},
    )  # fmt: skip
    if document == "good.pdf":
        make_pdf(tmp_path / "in" / document, title="Good", pages=1, seed=3)
    else:
        (tmp_path / "in").mkdir()
        (tmp_path / "in" / document).write_bytes(b"%PDF-1.7 not really a PDF")
    digest = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())]).files[0].digest
    dying = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.shared.dying_worker",
            str(tmp_path / "bucket"),
            method,
            prefix,
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dying.returncode == -signal.SIGKILL, dying.stderr
    assert collector.got == [], "it died before sending anything"

    clock.advance(5)  # its lease is over: the monitor duty ends the claim, then drains
    sweep(store, MonitorSettings())
    clock.advance(SENDER_GRACE + 1)
    drain_events(store, lambda: bucket_webhooks(store))

    kind = "document.done" if document == "good.pdf" else "document.failed"
    received = [Webhook(SECRET).verify(body, headers) for headers, body in collector.got]
    assert [(e["digest"], e["type"]) for e in received] == [(digest, kind)]
    assert _pending(store) == []


def test_a_removal_recorded_by_a_purge_that_stopped_before_removing_is_never_sent(
    tmp_path: Path, collector: Collector
) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path, clock=clock)
    hooks = Webhooks((collector.url,), (SECRET,))
    kept, gone = f"{1:064x}", f"{2:064x}"
    store.put(keys.out_key(kept), b"a result still there")
    for digest in (kept, gone):
        removal = document_event(EventType.REMOVED, digest, ("x.pdf",), clock(), "purge-1")
        record_event(store, removal, hooks)
    clock.advance(SENDER_GRACE + 1)

    drain_events(store, lambda: hooks)

    assert [json.loads(body)["digest"] for _, body in collector.got] == [gone]
    assert _pending(store) == []
