"""A worker that SIGKILLs itself right after one store request (``python -m
tests.shared.dying_worker BUCKET METHOD KEY_PREFIX``): a crash at a chosen point of a job's
end, for the events' crash tests."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings


class DyingStore(CountingStore):
    """Dies (SIGKILL, no cleanup) once ``method`` has written a key under ``prefix``."""

    def __init__(self, inner: LocalStore, method: str, prefix: str) -> None:
        super().__init__(inner)
        self.method, self.prefix = method, prefix

    def _after(self, method: str, key: str) -> None:
        if method == self.method and key.startswith(self.prefix):
            os.kill(os.getpid(), signal.SIGKILL)

    def put(self, key: str, data: bytes) -> str:
        etag = super().put(key, data)
        self._after("put", key)
        return etag

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        etag = super().put_if_absent(key, data)
        self._after("put_if_absent", key)
        return etag


if __name__ == "__main__":
    bucket, method, prefix = sys.argv[1:4]
    store = DyingStore(LocalStore(Path(bucket)), method, prefix)
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    sys.exit(3)  # it should have died before
