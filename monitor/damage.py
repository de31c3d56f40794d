"""The damage check: objects in the bucket that are there but cannot be used.

Crashes and network faults are dealt with where they happen (leases, conditional writes).
This finds what no process noticed: a result zip cut short or garbled (another tool's half
upload, bit rot, a hand edit), a source whose bytes no longer have its hash, a queue marker
that does not parse. It reads every object of a span of the hash space, a byte budget at a
time, and leaves a cursor in the bucket (``monitor/damage.json``) so the next check goes on
from there, as the consistency sweep does; the whole bucket is read once per lap.

What it finds it repairs when the bucket holds what the repair needs, and never deletes or
overwrites a source:

- a damaged result whose source is whole is made again: a remake request and a ticket, and
  the worker that claims it runs the whole chain from the source (the result is not read);
- a todo marker is rewritten from the source, a dead letter goes back in line
  (:func:`~bucketdigest.shared.queue.mend`); a processing marker is left to the lease sweep;
- a source whose bytes do not match its hash is reported: ``bucketdigest retry`` or
  ``reprocess`` fetch it again from the folder or repository it was ingested from.

Every damaged object stays listed in ``monitor/damage.json`` (``status`` shows it) until a
later lap finds it whole or gone. Index files are the indexer's to check: it rebuilds an index
that lacks any (:mod:`bucketdigest.search.indexer`).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.filetypes import UnsupportedFileType, file_type
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.pending import request_remake
from bucketdigest.shared.records import Claim, DamageCheck, Failure, JsonRecord, Ticket
from bucketdigest.shared.result import damage
from bucketdigest.shared.store import ObjectInfo, Store
from bucketdigest.shared.tickets import source_ticket

log = logging.getLogger(__name__)

CHECK_BYTES = 256 << 20
"""Bytes one check reads (results and sources) before it stops for the next one."""
LISTED = 1000
"""Keys listed per kind of object per check (a span of the hash space is where all agree)."""
_MARKER_RECORDS: dict[QueueState, type[JsonRecord]] = {
    QueueState.TODO: Ticket,
    QueueState.PROCESSING: Claim,
    QueueState.FAILED: Failure,
}
_END = "f" * 64


@dataclass
class DamageReport:
    """What one check read and found: keys of damaged objects with what is wrong and what was
    done, the documents sent to be made again, and the span of hashes covered."""

    checked: int = 0
    bytes_read: int = 0
    found: dict[str, str] = field(default_factory=dict)
    remade: list[str] = field(default_factory=list)
    mended: list[str] = field(default_factory=list)
    after: str = ""
    until: str = _END


@dataclass
class _Span:
    """The objects of each kind in the span being checked, by digest."""

    sources: dict[str, ObjectInfo] = field(default_factory=dict)
    results: dict[str, ObjectInfo] = field(default_factory=dict)
    markers: dict[str, list[tuple[QueueState, ObjectInfo]]] = field(default_factory=dict)

    def digests(self) -> list[str]:
        return sorted({*self.sources, *self.results, *self.markers})


def _span(store: Store, after: str) -> tuple[_Span, str]:
    """The objects after ``after`` up to the last digest every listing reaches (the end of
    the hash space when none is cut short), and that digest."""
    span = _Span()
    until = _END
    sources = list(store.list(keys.RAW_PREFIX, _start(keys.RAW_PREFIX, after), LISTED))
    results = list(store.list(keys.OUT_PREFIX, _start(keys.OUT_PREFIX, after), LISTED))
    for listed, parse in ((sources, keys.parse_raw_key), (results, keys.parse_out_key)):
        if len(listed) == LISTED:
            until = min(until, _digest_of(parse(listed[-1].key)))
    for state in QueueState:
        found = list(queue.markers(store, state, after, LISTED))
        if len(found) == LISTED:
            until = min(until, found[-1][0])
        for digest, info in found:
            span.markers.setdefault(digest, []).append((state, info))
    span.sources = {d: info for info in sources if (d := keys.parse_raw_key(info.key)[0]) <= until}
    span.results = {d: info for info in results if (d := keys.parse_out_key(info.key)) <= until}
    span.markers = {d: found for d, found in span.markers.items() if d <= until}
    return span, until


def _start(prefix: str, after: str) -> str:
    return keys.past_digest(prefix, after) if after else ""


def _digest_of(parsed: str | tuple[str, str]) -> str:
    return parsed if isinstance(parsed, str) else parsed[0]


def _source_damage(store: Store, source: ObjectInfo, scratch: Path) -> str | None:
    digest, _ = keys.parse_raw_key(source.key)
    path = scratch / "source"
    try:
        store.download(source.key, path)
    except NotFound:
        return None
    with path.open("rb") as handle:
        found = hashlib.file_digest(handle, "sha256").hexdigest()
    path.unlink()
    if found == digest:
        return None
    return (
        f"its bytes have another hash ({found[:12]}): the source is damaged; "
        f"`bucketdigest retry` or `reprocess` fetch it again from where it was ingested"
    )


def _result_damage(store: Store, result: ObjectInfo, scratch: Path) -> str | None:
    path = scratch / "result.zip"
    try:
        store.download(result.key, path)
    except NotFound:
        return None
    reason = damage(path)
    path.unlink()
    return reason


def _check_markers(
    store: Store, digest: str, found: list[tuple[QueueState, ObjectInfo]], report: DamageReport
) -> None:
    for state, info in found:
        try:
            marker = store.get(info.key)
            _MARKER_RECORDS[state].from_json(marker.data)
        except NotFound:
            continue
        except CorruptRecord as exc:
            if queue.mend(store, state, digest, info.key, marker.etag):
                report.mended.append(info.key)
                log.warning("%s: %s; rebuilt from the stored source", info.key, exc)
                continue
            what = (
                "left to the lease sweep"
                if state is QueueState.PROCESSING
                else "no source to rebuild it from"
            )
            report.found[info.key] = f"{exc} ({what})"


def _remake(store: Store, digest: str, source: ObjectInfo, reason: str, queued: bool) -> str:
    """Send a document whose result is damaged to be made again (unless it is in the queue
    already: a reprocess under way); what was done."""
    try:
        kind = file_type(keys.parse_raw_key(source.key)[1])
    except UnsupportedFileType as exc:
        return f"result damaged ({reason}); cannot be made again: {exc}"
    if not queued:
        request_remake(store, digest, str(kind))
        queue.enqueue(store, source_ticket(store, source))
    return f"result damaged ({reason}); being made again from its source"


def check_damage(store: Store, budget: int = CHECK_BYTES, after: str | None = None) -> DamageReport:
    """Check the next span of the bucket (from ``after``, by default where the previous check
    stopped) until ``budget`` bytes are read; repair what can be, record what is found (see
    the module)."""
    try:
        previous = DamageCheck.from_json(store.get(keys.DAMAGE_CHECK_KEY).data)
    except (NotFound, CorruptRecord):
        previous = DamageCheck(after="", checked_at=store.now(), found={})
    start = previous.after if after is None else after
    span, until = _span(store, start)
    report = DamageReport(after=start, until=until)
    with tempfile.TemporaryDirectory(prefix="bucketdigest-damage-") as folder:
        scratch = Path(folder)
        for digest in span.digests():
            if report.bytes_read >= budget:
                report.until = _before(digest)
                break
            _check_markers(store, digest, span.markers.get(digest, []), report)
            source = span.sources.get(digest)
            source_reason = None
            if source is not None:
                report.bytes_read += source.size
                source_reason = _source_damage(store, source, scratch)
                if source_reason:
                    report.found[source.key] = source_reason
            if (result := span.results.get(digest)) is not None:
                report.bytes_read += result.size
                if reason := _result_damage(store, result, scratch):
                    if source is not None and source_reason is None:
                        queued = digest in span.markers
                        report.found[result.key] = _remake(store, digest, source, reason, queued)
                        report.remade.append(digest)
                    else:
                        report.found[result.key] = (
                            f"result damaged ({reason}); its source is not whole"
                        )
            report.checked += 1
    _record(store, previous, report)
    return report


def _before(digest: str) -> str:
    """The largest digest before ``digest`` (the check stopped there; it goes on from it)."""
    value = int(digest, 16) - 1
    return f"{max(value, 0):064x}"


def _record(store: Store, previous: DamageCheck, report: DamageReport) -> None:
    """Forget what was found in the span just checked, add what is found now, move on."""

    def in_span(key: str) -> bool:
        digest = key.rsplit("/", 1)[-1].split(".", 1)[0]
        return report.after < digest <= report.until

    found = {key: why for key, why in previous.found.items() if not in_span(key)}
    found.update(report.found)
    after = "" if report.until == _END else report.until
    store.put(
        keys.DAMAGE_CHECK_KEY,
        DamageCheck(after=after, checked_at=store.now(), found=found).to_json(),
    )


def damaged_objects(store: Store) -> dict[str, str]:
    """Every damaged object the checks have found and not seen whole since, by key."""
    try:
        return DamageCheck.from_json(store.get(keys.DAMAGE_CHECK_KEY).data).found
    except (NotFound, CorruptRecord):
        return {}


def damaged_sources(store: Store) -> set[str]:
    """The digests whose source the checks found damaged."""
    return {
        keys.parse_raw_key(key)[0]
        for key in damaged_objects(store)
        if key.startswith(keys.RAW_PREFIX)
    }


def check_bucket(store: Store) -> DamageReport:
    """Check every object of the bucket now, in one lap from the start of the hash space
    (``bucketdigest check``), repairing what can be; the lap's report."""
    lap = DamageReport()
    after = ""
    while True:
        span = check_damage(store, budget=1 << 62, after=after)
        lap.checked += span.checked
        lap.bytes_read += span.bytes_read
        lap.found.update(span.found)
        lap.remade += span.remade
        lap.mended += span.mended
        if span.until == _END:
            return lap
        after = span.until


def forget(store: Store, repaired: set[str]) -> None:
    """Drop ``repaired`` keys from the list of damaged objects (made whole by a command that
    fetched them again, say), without waiting for the next lap to see them whole."""
    try:
        record = DamageCheck.from_json(store.get(keys.DAMAGE_CHECK_KEY).data)
    except (NotFound, CorruptRecord):
        return
    found = {key: why for key, why in record.found.items() if key not in repaired}
    if found != record.found:
        store.put(keys.DAMAGE_CHECK_KEY, replace(record, found=found).to_json())
