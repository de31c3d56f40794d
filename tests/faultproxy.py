"""A small HTTP proxy in front of moto's server that makes a share of requests fail the way
S3 does in real life: 500 and 503 SlowDown, 409 ConditionalRequestConflict (which moto never
returns), and dropped connections, both before and after the request reached the store."""

from __future__ import annotations

import http.client
import random
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

_ERRORS = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
    409: ("ConditionalRequestConflict", "A conflicting operation is in progress."),
}
FATES = ("503-before", "409-before", "drop-before", "500-after", "drop-after")


class FaultProxy:
    """Forwards to ``upstream``; each request fails with probability ``rate``."""

    def __init__(
        self, upstream: str, rate: float, seed: int = 0, *, ignore_conditions: bool = False
    ) -> None:
        self.upstream = urlparse(upstream)
        self.ignore_conditions = ignore_conditions
        """Drop If-None-Match and If-Match, as stores that ignore conditional writes do."""
        self.rate = rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.injected: Counter[str] = Counter()
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fate = proxy.fate()
                if fate in ("503-before", "409-before"):
                    return self._error(int(fate[:3]))
                if fate == "drop-before":
                    self.close_connection = True
                    return None
                status, headers, payload = proxy.forward(
                    self.command, self.path, self.headers, body
                )
                if fate == "500-after":
                    return self._error(500)
                if fate == "drop-after":
                    self.close_connection = True
                    return None
                self.send_response(status)
                length = str(len(payload))
                for name, value in headers:
                    if name.lower() == "content-length" and self.command == "HEAD":
                        length = value  # the object's size: a HEAD's answer has no body
                    elif name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", length)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                return None

            def _error(self, status: int) -> None:
                code, message = _ERRORS[status]
                payload = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def fate(self) -> str | None:
        with self.lock:
            self.requests += 1
            if self.rng.random() >= self.rate:
                return None
            fate = self.rng.choice(FATES)
            self.injected[fate] += 1
            return fate

    def forward(
        self, method: str, path: str, headers: object, body: bytes
    ) -> tuple[int, list, bytes]:
        connection = http.client.HTTPConnection(
            self.upstream.hostname, self.upstream.port, timeout=60
        )
        try:
            dropped = {"connection"}
            if self.ignore_conditions:
                dropped |= {"if-none-match", "if-match"}
            sent = {k: v for k, v in headers.items() if k.lower() not in dropped}  # type: ignore[attr-defined]
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
