"""The lease on a claimed job: heartbeats that extend it, and the fence that ends it.

Every heartbeat rewrites the processing marker with If-Match on the ETag of our last write.
A 412 or a missing marker means someone else (the monitor, or a new owner) has acted on the
job: the lease is lost, ``lost`` is set, and the job must write nothing more.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from datetime import timedelta

from bucketdigest.shared import keys
from bucketdigest.shared.errors import StoreError
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.store import Store
from bucketdigest.worker.claim import Job

log = logging.getLogger(__name__)


class Lease:
    """Keeps ``job``'s claim alive from a background thread until released."""

    def __init__(self, store: Store, job: Job, lease_seconds: float) -> None:
        self.store = store
        self.job = job
        self.lease_seconds = lease_seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)
        self.key = keys.queue_key(QueueState.PROCESSING, job.digest)

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
            now = self.store.now()
            claim = replace(
                self.job.claim,
                heartbeat_at=now,
                lease_until=now + timedelta(seconds=self.lease_seconds),
            )
            try:
                etag = self.store.put_if_match(self.key, claim.to_json(), self.job.etag)
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

    def release(self) -> bool:
        """End the claim with a conditional delete; False if it was no longer ours."""
        self._stop.set()
        with self._lock:
            if self.lost.is_set():
                return False
            released = self.store.delete(self.key, if_match=self.job.etag)
            if not released:
                self.lost.set()
            return released
