"""The queue: a document's states and every transition between them (docs/protocol.md).

This package is the only code that writes or removes markers under ``queue/``: reading in
:mod:`.states`, every transition in :mod:`.transitions`. Each function is one
arrow of the state diagram; each writes the new state before removing the old one, so a crash
between the two requests leaves a duplicate (resolved later), never a gap. Transitions out of
``processing`` are fenced: they remove the claim only if it is still the version (ETag) the
caller holds.

```
ingest ─enqueue─► todo ─claim─► processing ─finish─► (done: store/out/<h>.zip)
                   ▲              │  renew ⟲
                   ├──hand_back───┤
                   ├──requeue─────┤   end_attempt: an error or an expired lease with
                   │              │   attempts left requeues, otherwise dead-letters
                   │              └─dead_letter─► failed
                   └──────────────retry──────────────┘
remove: markers left beside a finished result
```
"""

from bucketdigest.shared.queue.states import (
    DocState,
    document_states,
    marker_keys,
    markers,
    read_failure,
    state_of,
    todo_lanes,
    todo_marker,
)
from bucketdigest.shared.queue.transitions import (
    Announce,
    AttemptEnd,
    ClaimResult,
    Job,
    claim,
    dead_letter,
    done_event,
    end_attempt,
    enqueue,
    failed_event,
    finish,
    hand_back,
    hold,
    mend,
    release,
    remove,
    remove_damaged,
    renew,
    reprioritize,
    requeue,
    retry,
)

__all__ = [
    "Announce",
    "AttemptEnd",
    "ClaimResult",
    "DocState",
    "Job",
    "claim",
    "dead_letter",
    "document_states",
    "done_event",
    "end_attempt",
    "enqueue",
    "failed_event",
    "finish",
    "hand_back",
    "hold",
    "marker_keys",
    "markers",
    "mend",
    "read_failure",
    "release",
    "remove",
    "remove_damaged",
    "renew",
    "reprioritize",
    "requeue",
    "retry",
    "state_of",
    "todo_lanes",
    "todo_marker",
]
