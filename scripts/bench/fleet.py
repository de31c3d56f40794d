"""The fleet: a worker without bucket credentials against one with them, and event delivery
under a receiver that fails.

Broker: the same real corpus documents (the smallest PDFs of the corpus, default options),
converted on moto's server once by a credentialed worker and once by a worker through
``serve --broker`` (both one worker, in this process, one after the other): wall time, pages/s,
and the requests each makes per document (the credentialed worker's to the bucket; the
brokered worker's to the broker, and the transfers it makes straight to the bucket by the
presigned URLs the broker signs).

Events: documents done, failed and removed on a local bucket whose event endpoint refuses a
share of deliveries, accepts some only after the sender gave up waiting (so the sender sends
them again: the duplicates at-least-once delivery makes), and answers the rest; the monitor
duty drains what is left. Every terminal document must get its event; duplicates are counted.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from common import CLI, moto_server, new_bucket, table
from corpus import fetch, page_count

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.monitor.purge import remove_document
from bucketdigest.shared import events, keys
from bucketdigest.shared.bucket_settings import bucket_webhooks, change_settings
from bucketdigest.shared.clock import utc_now
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.brokered import BrokeredStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import add_token
from bucketdigest.worker.loop import Worker, WorkerSettings

SMALLEST = 10
"""Real corpus PDFs the broker bench converts (the smallest, so both runs take minutes)."""


def _documents(quick: bool, root: Path) -> list[Path]:
    if quick:
        return [
            make_pdf(root / f"gen-{n}.pdf", title=f"Gen {n}", pages=2, seed=n) for n in range(3)
        ]
    pdfs = [(page_count(p), p) for p, _ in fetch() if p.suffix.lower() == ".pdf"]
    chosen = sorted((n, str(p)) for n, p in pdfs if n > 0)[:SMALLEST]
    inbox = root / "in"
    inbox.mkdir(parents=True, exist_ok=True)
    for number, (_, path) in enumerate(chosen):
        shutil.copyfile(path, inbox / f"{number:02d}-{Path(path).name}")
    return sorted(inbox.iterdir())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _convert(worker: Worker, settings: StoreSettings, folder: Path) -> tuple[float, int]:
    """Ingest ``folder`` into the bucket, then ``worker`` converts it: (seconds, done)."""
    bucket = open_store(settings)
    ingest_sources(bucket, [str(folder)], IngestSettings())
    started = time.perf_counter()
    worker.run()
    return time.perf_counter() - started, sum(1 for _ in bucket.list(keys.OUT_PREFIX))


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the broker at {url} did not start")


def broker_run(quick: bool) -> str:
    once = WorkerSettings(exit_when_idle=True, monitor_every=None)
    with tempfile.TemporaryDirectory() as scratch, moto_server() as endpoint:
        root = Path(scratch)
        docs = _documents(quick, root)
        folder = docs[0].parent
        pages = sum(page_count(d) for d in docs)

        brokered = StoreSettings(bucket=f"s3://{new_bucket(endpoint)}/b", endpoint_url=endpoint)
        through = open_store(brokered)
        token, _ = add_token(through, "bench")
        port = _free_port()
        server = subprocess.Popen(
            [*CLI, "serve", "--bucket", brokered.bucket, "--endpoint-url", endpoint,
             "--broker", "--port", str(port), "--processes", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        best: dict[str, tuple[float, int, int, int]] = {}
        try:
            _wait_for(url)
            for _ in range(1 if quick else 2):  # interleaved; the faster run of each counts
                direct = StoreSettings(
                    bucket=f"s3://{new_bucket(endpoint)}/b", endpoint_url=endpoint
                )
                credentialed = Worker(open_store(direct), once)
                seconds, done = _convert(credentialed, direct, folder)
                run = (seconds, done, credentialed.store.total, 0)
                best["direct"] = min(best.get("direct", run), run)
                for info in list(through.list("")):  # the same bucket, emptied
                    if not info.key.startswith(keys.BROKER_TOKENS_PREFIX):
                        through.delete(info.key)
                via = BrokeredStore(url, token)
                seconds, done = _convert(Worker(via, once), brokered, folder)
                run = (seconds, done, via.requests, via.transfers_made)
                best["broker"] = min(best.get("broker", run), run)
        finally:
            server.terminate()
            server.wait(timeout=60)
    seconds_direct, done_direct, requests_direct, _ = best["direct"]
    seconds_broker, done_broker, requests_broker, transfers = best["broker"]
    n = len(docs)
    rows = [
        ("with credentials", f"{done_direct}/{n}", f"{seconds_direct:.1f}",
         f"{pages / seconds_direct:.2f}", f"{requests_direct / n:.1f} to the bucket", "—"),
        ("through the broker", f"{done_broker}/{n}", f"{seconds_broker:.1f}",
         f"{pages / seconds_broker:.2f}", f"{requests_broker / n:.1f} to the broker",
         f"{transfers / n:.1f}"),
    ]  # fmt: skip
    header = ("worker", "documents done", "seconds", "pages/s", "requests per document",
              "direct transfers per document")  # fmt: skip
    return (
        f"{n} {'generated' if quick else 'real corpus'} PDFs ({pages} pages), one worker, "
        "default options, moto's server on this machine; the broker is `serve --broker` in its "
        "own process, checking the token against the bucket at every request.\n\n"
        + table(header, rows)
        + f"\n\nThrough the broker: {seconds_broker / seconds_direct:.2f} times the credentialed "
        f"worker's time; {(requests_broker - requests_direct) / n:+.1f} requests per document "
        "(each broker request makes one to three bucket requests of its own: the token, the "
        "claim's marker, the operation).\n"
    )


class _FlakyReceiver:
    """Refuses ``refuse`` of deliveries, answers ``late`` of them after the sender's timeout
    (having kept the event), accepts the rest."""

    def __init__(self, refuse: float, late: float, seed: int = 7) -> None:
        self.accepted: Counter[str] = Counter()
        self.deliveries = 0
        rng = random.Random(seed)
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                with lock:
                    receiver.deliveries += 1
                    draw = rng.random()
                if draw < refuse:
                    self.send_response(503)
                    self.end_headers()
                    return
                with lock:
                    receiver.accepted[self.headers["webhook-id"]] += 1
                if draw < refuse + late:
                    time.sleep(events.SEND_TIMEOUT + 0.5)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def events_run(quick: bool) -> str:
    events.SEND_TIMEOUT = 1.0  # the drill's: a late answer costs a second, not ten
    receiver = _FlakyReceiver(refuse=0.3, late=0.1)
    ahead = [0.0]
    removed = 3 if quick else 10
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        store = LocalStore(root / "bucket", clock=lambda: utc_now() + timedelta(seconds=ahead[0]))
        change_settings(
            store,
            {"events": [receiver.url], "events_secret": "new", "converter_mode": "legacy",
             "max_attempts": 1},
        )  # fmt: skip
        good = 6 if quick else 30
        for n in range(good):
            make_pdf(root / "in" / f"doc-{n:02d}.pdf", title=f"Doc {n}", pages=1, seed=n)
        for n in range(2 if quick else 5):
            (root / "in" / f"broken-{n}.pdf").write_bytes(b"%PDF-1.7 broken " + bytes([n]))
        report = ingest_sources(store, [str(root / "in")], IngestSettings())
        Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
        for info in list(store.list(keys.OUT_PREFIX))[:removed]:
            remove_document(store, keys.parse_out_key(info.key))
        hooks = bucket_webhooks(store)
        passes = 0
        while list(store.list(keys.event_prefix(keys.EventState.PENDING))) and passes < 30:
            ahead[0] += 3600  # the backoff passes at once
            events.drain_events(store, lambda: hooks)
            passes += 1
        left = sum(1 for _ in store.list(keys.event_prefix(keys.EventState.PENDING)))
        given_up = sum(1 for _ in store.list(keys.event_prefix(keys.EventState.UNDELIVERABLE)))
    receiver.server.shutdown()
    terminal = len(report.files) + removed
    duplicates = sum(n - 1 for n in receiver.accepted.values())
    rows = [
        (terminal, len(receiver.accepted), receiver.deliveries, duplicates, passes, left, given_up)
    ]
    header = ("terminal changes", "events received", "deliveries tried", "duplicates received",
              "drain passes", "still pending", "undeliverable")  # fmt: skip
    return (
        f"{len(report.files)} documents ({good} good, the rest unreadable: failed for good), "
        f"{removed} of the done ones then removed; the receiver refuses 30% of deliveries (503) "
        "and keeps 10% but answers only after the sender stopped waiting (1 s here).\n\n"
        + table(header, rows)
        + "\n"
    )
