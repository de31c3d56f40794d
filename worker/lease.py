"""The lease on a claimed job: heartbeats that extend it, and the fence that ends it.

Every heartbeat rewrites the processing marker with If-Match on the ETag of our last write
(:func:`bucketdigest.shared.queue.renew`). A 412 or a missing marker means someone else (the
monitor, or a new owner) has acted on the job: the lease is lost, ``lost`` is set, and the job
must write nothing more. The job leaves ``processing`` through :meth:`Lease.end`, which runs
the queue transition with our current ETag, under the same lock as the heartbeats.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from bucketdigest.shared import queue
from bucketdigest.shared.errors import StoreError
from bucketdigest.shared.queue import Job
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)


class Lease:
    """Keeps ``job``'s claim alive from a background thread until it ends."""

    def __init__(self, store: Store, job: Job, lease_seconds: float) -> None:
        self.store = store
        self.job = job
        self.lease_seconds = lease_seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_seconds / 4):
            self.heartbeat()
            if self.lost.is_set():
                return

    def heartbeat(self) -> None:
        """Extend the lease once; sets ``lost`` if the marker is no longer ours."""
        with self._lock:
            if self.lost.is_set():
                return
            now = self.store.now()
            claim = replace(
                self.job.claim,
                heartbeat_at=now,
                lease_until=now + timedelta(seconds=self.lease_seconds),
            )
            try:
                etag = queue.renew(self.store, claim, self.job.etag)
            except StoreError as exc:
                if now > self.job.claim.lease_until:
                    log.error(
                        "lease on %s expired while the store failed: %s", self.job.digest, exc
                    )
                    self.lost.set()
                return
            if etag is None:
                log.warning("lease on %s lost: the processing marker changed", self.job.digest)
                self.lost.set()
                return
            self.job = replace(self.job, claim=claim, etag=etag)

    def end(self, transition: Callable[[str], bool]) -> bool:
        """Stop heartbeats and leave ``processing`` by ``transition(current ETag)`` (a queue
        function); False, with nothing written, if the lease was already lost, or if the
        transition found the claim no longer ours."""
        self._stop.set()
        with self._lock:
            if self.lost.is_set():
                return False
            if not transition(self.job.etag):
                self.lost.set()
                return False
            return True
