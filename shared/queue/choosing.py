"""Choosing which job to claim: higher priorities first, yet no lane starves, and a claim
costs a few small LISTs whatever the queue length.

Each claim tries the todo lanes (``queue/todo-high/``, ``queue/todo/``, ``queue/todo-low/``)
in an order drawn by lottery: mostly high, normal, low; a share of claims (``NORMAL_FIRST``,
the bucket's ``normal_lane_share``) starts with normal and one (``LOW_FIRST``,
``low_lane_share``) with low, so a flood of higher-priority documents slows
the others down but never stops them. Within a lane, candidates are listed from a random point
of the hash space (``StartAfter``), wrapping around to the start, so concurrent workers rarely
contend for the same keys (a lane shorter than a listing is known whole from one LIST); a lane
found empty is not listed again for ``EMPTY_LANE_SECONDS``. When several lanes need listing and
the queue is short, one LIST of their common prefix tells every lane's content at once (most
claims of a small queue, and every claim attempt of an idle worker, cost one LIST, not three).
The claim itself is :func:`bucketdigest.shared.queue.claim`. (A worker chooses here, and so
does the broker for the workers it serves.)
"""

from __future__ import annotations

import random
import time
from collections import deque

from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.queue import states, transitions
from bucketdigest.shared.queue.transitions import ClaimResult
from bucketdigest.shared.store import Store

CANDIDATES_PER_LIST = 16
SURVEY_LIMIT = 3 * CANDIDATES_PER_LIST
"""Markers one LIST over every lane may find and still tell each lane's whole content."""
NORMAL_FIRST = 0.10
LOW_FIRST = 0.05
EMPTY_LANE_SECONDS = 5.0


class Claimer:
    """Claims jobs for one worker. A LIST yields up to ``CANDIDATES_PER_LIST`` candidates of
    a lane; the ones not tried yet are tried first next time, so a long queue costs about two
    LISTs per sixteen claims, a short or empty lane one LIST."""

    def __init__(
        self,
        store: Store,
        worker_id: str,
        lease_seconds: float,
        rng: random.Random | None = None,
        *,
        normal_first: float = NORMAL_FIRST,
        low_first: float = LOW_FIRST,
    ) -> None:
        self.store = store
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.rng = rng or random.Random()
        self.normal_first = normal_first
        """The share of claims that try the normal lane first (the bucket's setting)."""
        self.low_first = low_first
        self._pending: dict[Priority, deque[str]] = {lane: deque() for lane in Priority}
        self._empty_until: dict[Priority, float] = dict.fromkeys(Priority, 0.0)

    def _order(self) -> list[Priority]:
        draw = self.rng.random()
        if draw < self.low_first:
            return [Priority.LOW, Priority.HIGH, Priority.NORMAL]
        if draw < self.low_first + self.normal_first:
            return [Priority.NORMAL, Priority.HIGH, Priority.LOW]
        return [Priority.HIGH, Priority.NORMAL, Priority.LOW]

    def _listing(self, lane: Priority) -> list[str]:
        """Up to ``CANDIDATES_PER_LIST`` digests of ``lane``. The lane is listed from its
        start: a short lane (an empty one most often) is then known whole after one LIST, and
        its candidates are shuffled. A long one is listed again from a random point of the
        hash space, wrapping around to the start (a third LIST) when that comes back short,
        so concurrent workers rarely contend for the same keys."""
        todo = QueueState.TODO
        first = [
            d for d, _ in states.markers(self.store, todo, limit=CANDIDATES_PER_LIST, priority=lane)
        ]
        if len(first) < CANDIDATES_PER_LIST:
            self.rng.shuffle(first)
            return first
        start = f"{self.rng.getrandbits(256):064x}"
        found = [d for d, _ in states.markers(self.store, todo, start, CANDIDATES_PER_LIST, lane)]
        if len(found) < CANDIDATES_PER_LIST:
            wrapped = states.markers(
                self.store, todo, limit=CANDIDATES_PER_LIST - len(found), priority=lane
            )
            found += [d for d, _ in wrapped if d <= start]
        return found

    def _try(self, digest: str, lane: Priority) -> ClaimResult:
        return transitions.claim(self.store, digest, self.worker_id, self.lease_seconds, lane)

    def _next_in(self, lane: Priority, trust_empty: bool) -> ClaimResult | None:
        """A job from ``lane``, or none (saying whether some wait for their retry time); None
        when skipped as recently found empty."""
        pending = self._pending[lane]
        waiting = False
        while pending:
            result = self._try(pending.popleft(), lane)
            if result.job is not None:
                return result
            waiting = waiting or result.deferred
        if trust_empty and time.monotonic() < self._empty_until[lane]:
            return ClaimResult(None, deferred=True) if waiting else None
        candidates = deque(self._listing(lane))
        if not candidates:
            self._empty_until[lane] = time.monotonic() + EMPTY_LANE_SECONDS
        deferred = False
        while candidates:
            result = self._try(candidates.popleft(), lane)
            if result.job is not None:
                self._pending[lane] = candidates
                return result
            deferred = deferred or result.deferred
        return ClaimResult(None, deferred=deferred)

    def _due(self) -> list[Priority]:
        """The lanes a claim would list now: no candidates in hand, not known empty."""
        now = time.monotonic()
        return [
            lane for lane in Priority if not self._pending[lane] and now >= self._empty_until[lane]
        ]

    def _survey(self, lanes: list[Priority]) -> bool:
        """When more than one lane needs listing, one LIST over all of them (their common
        prefix) tells each lane's content if the queue is short: each of ``lanes`` gets its
        candidates, shuffled, and counts as known for ``EMPTY_LANE_SECONDS`` (once they are
        tried, it is not listed again before then). Whether the lanes are known; a long queue
        is left to each lane's own listing."""
        if len(lanes) < 2:
            return False
        found = states.todo_lanes(self.store, SURVEY_LIMIT)
        if found is None:
            return False
        now = time.monotonic()
        for lane in lanes:
            self.rng.shuffle(found[lane])
            self._pending[lane] = deque(found[lane])
            self._empty_until[lane] = now + EMPTY_LANE_SECONDS
        return True

    def next(self) -> ClaimResult:
        """Claim one job, or report that none is claimable (and whether some are waiting).
        Before reporting none, lanes skipped as recently empty are listed after all (in one
        listing when the queue is short)."""
        self._survey(self._due())
        deferred = False
        skipped = []
        for lane in self._order():
            result = self._next_in(lane, trust_empty=True)
            if result is None:
                skipped.append(lane)
                continue
            if result.job is not None:
                return result
            deferred = deferred or result.deferred
        if self._survey(skipped):
            for lane in (lane for lane in self._order() if lane in skipped):
                result = self._next_in(lane, trust_empty=True)
                if result is not None and result.job is not None:
                    return result
                deferred = deferred or bool(result and result.deferred)
            return ClaimResult(None, deferred=deferred)
        for lane in skipped:
            result = self._next_in(lane, trust_empty=False)
            if result is not None and result.job is not None:
                return result
            deferred = deferred or bool(result and result.deferred)
        return ClaimResult(None, deferred=deferred)


def claim_next(store: Store, worker_id: str, lease_seconds: float) -> ClaimResult:
    """Claim one job from the todo lanes (a one-off :class:`Claimer`)."""
    return Claimer(store, worker_id, lease_seconds).next()
