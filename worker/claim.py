"""Choosing which job to claim: candidates are listed from a random point of the hash space
(``StartAfter``), wrapping around to the start, so a claim costs one small LIST whatever the
queue length and concurrent workers rarely contend for the same keys. The claim itself is
:func:`bucketdigest.shared.queue.claim`.
"""

from __future__ import annotations

import random
from collections import deque

from bucketdigest.shared import queue
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import ClaimResult
from bucketdigest.shared.store import Store

CANDIDATES_PER_LIST = 16


class Claimer:
    """Claims jobs for one worker. A LIST yields up to ``CANDIDATES_PER_LIST`` candidates; the
    ones not tried yet are tried first next time, so a long queue costs about one LIST per
    sixteen claims."""

    def __init__(
        self, store: Store, worker_id: str, lease_seconds: float, rng: random.Random | None = None
    ) -> None:
        self.store = store
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.rng = rng or random.Random()
        self._pending: deque[str] = deque()

    def _listing(self) -> list[str]:
        """Up to ``CANDIDATES_PER_LIST`` digests from a random point of the hash space,
        wrapping around to the start (a second LIST) only when the first comes back short."""
        start = f"{self.rng.getrandbits(256):064x}"
        todo = QueueState.TODO
        found = [d for d, _ in queue.markers(self.store, todo, start, CANDIDATES_PER_LIST)]
        if len(found) < CANDIDATES_PER_LIST:
            wrapped = queue.markers(self.store, todo, limit=CANDIDATES_PER_LIST - len(found))
            found += [d for d, _ in wrapped if d <= start]
        return found

    def _try(self, digest: str) -> ClaimResult:
        return queue.claim(self.store, digest, self.worker_id, self.lease_seconds)

    def next(self) -> ClaimResult:
        """Claim one job, or report that none is claimable (and whether some are waiting)."""
        while self._pending:
            result = self._try(self._pending.popleft())
            if result.job is not None:
                return result
        deferred = False
        candidates = deque(self._listing())
        while candidates:
            result = self._try(candidates.popleft())
            if result.job is not None:
                self._pending = candidates
                return result
            deferred = deferred or result.deferred
        return ClaimResult(None, deferred=deferred)


def claim_next(store: Store, worker_id: str, lease_seconds: float) -> ClaimResult:
    """Claim one job from ``queue/todo/`` (a one-off :class:`Claimer`)."""
    return Claimer(store, worker_id, lease_seconds).next()
