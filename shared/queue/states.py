"""Reading the queue: where a document stands, and the markers of each state."""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterable, Iterator
from enum import StrEnum

from bucketdigest.shared import keys
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.keys import Priority, QueueState
from bucketdigest.shared.records import Failure
from bucketdigest.shared.store import ObjectInfo, Store, StoredObject

log = logging.getLogger(__name__)


class DocState(StrEnum):
    """Where a whole document stands, as people are told it: its marker's queue folder
    (:class:`~bucketdigest.shared.keys.QueueState`, a part of the key layout), or ``done``,
    which no marker says: the result zip in ``store/out/`` does. Not to be confused with
    :class:`~bucketdigest.shared.records.OutputStatus`, where one output of a document stands
    inside its digest chain."""

    TODO = "todo"
    PROCESSING = "processing"
    FAILED = "failed"
    DONE = "done"

    @classmethod
    def of(cls, state: QueueState) -> DocState:
        """The document state a marker in ``state``'s folder stands for."""
        return cls(state.value)


def todo_lanes(store: Store, limit: int) -> dict[Priority, list[str]] | None:
    """Every todo lane's digests from one LIST of the lanes' common prefix, or None when they
    hold ``limit`` markers or more together (then each lane is listed on its own)."""
    found: dict[Priority, list[str]] = {lane: [] for lane in Priority}
    seen = 0
    for info in store.list(keys.TODO_LANES_PREFIX, limit=limit):
        seen += 1
        lane = next((lane for lane in Priority if info.key.startswith(lane.prefix)), None)
        try:
            _, digest = keys.parse_queue_key(info.key)
        except ValueError:
            lane = None
        if lane is None:
            log.warning("ignoring a foreign object in the queue: %s", info.key)
            continue
        found[lane].append(digest)
    return found if seen < limit else None


def markers(
    store: Store,
    state: QueueState,
    start_after: str = "",
    limit: int | None = None,
    priority: Priority | None = None,
) -> Iterator[tuple[str, ObjectInfo]]:
    """``(digest, marker info)`` of the markers in one queue state, in digest order, from the
    digest ``start_after`` on: todo markers of every lane merged, or of ``priority``'s lane
    alone. Objects that are not markers are skipped with a warning."""
    if state is QueueState.TODO and priority is None:
        lanes = [markers(store, state, start_after, limit, lane) for lane in Priority]
        merged = heapq.merge(*lanes, key=lambda found: found[0])
        yield from itertools.islice(merged, limit)
        return
    folder = (priority or Priority.NORMAL).prefix if state is QueueState.TODO else state.prefix
    after = f"{folder}{keys.check_hash(start_after)}" if start_after else ""
    for info in store.list(folder, after, limit):
        try:
            _, digest = keys.parse_queue_key(info.key)
        except ValueError:
            log.warning("ignoring a foreign object in the queue: %s", info.key)
            continue
        yield digest, info


def marker_keys(digest: str, states: Iterable[QueueState] = tuple(QueueState)) -> list[str]:
    """Every key a marker of ``digest`` in ``states`` may have (a todo marker in any lane)."""
    found = []
    for state in states:
        lanes = Priority if state is QueueState.TODO else (Priority.NORMAL,)
        found += [keys.queue_key(state, digest, lane) for lane in lanes]
    return found


def document_states(store: Store) -> dict[str, DocState]:
    """digest → state, for every document with a marker or a result (one listing each)."""
    states: dict[str, DocState] = {}
    for state in QueueState:
        for digest, _ in markers(store, state):
            states[digest] = DocState.of(state)
    for info in store.list(keys.OUT_PREFIX):
        states[keys.parse_out_key(info.key)] = DocState.DONE
    return states


def state_of(store: Store, digest: str) -> DocState | None:
    """One document's state (a HEAD per place asked), or None if the bucket has no trace."""
    if store.head(keys.out_key(digest)) is not None:
        return DocState.DONE
    for key in marker_keys(digest):
        if store.head(key) is not None:
            return DocState.of(keys.parse_queue_key(key)[0])
    return None


def todo_marker(store: Store, digest: str) -> tuple[Priority, StoredObject] | None:
    """``digest``'s todo marker and its lane (the highest, should there be several)."""
    for lane in Priority:
        try:
            return lane, store.get(keys.queue_key(QueueState.TODO, digest, lane))
        except NotFound:
            continue
    return None


def read_failure(store: Store, digest: str) -> Failure | None:
    """The dead letter of ``digest``, or None."""
    try:
        return Failure.from_json(store.get(keys.queue_key(QueueState.FAILED, digest)).data)
    except NotFound:
        return None
