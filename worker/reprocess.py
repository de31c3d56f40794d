"""``bucketdigest reprocess``: run some digesters again on documents already done.

For each document a reprocess request is written to ``work/<hash>/digests.json``: the records
from its result zip, with the chosen digesters' outputs (and everything they reset) back to
``todo``, and a todo marker is created. The worker that claims it starts from the existing zip,
runs only what is ``todo`` and replaces the zip, so every other output stays byte-identical.
``--outdated`` runs again every digester whose version changed, and the whole chain for a
result made with other chain settings of the bucket (``bucketdigest config``).
A damaged result zip (see :func:`~bucketdigest.shared.result.damage`) has nothing to start
from: its document runs the whole chain again from its source.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bucketdigest.shared import keys, queue
from bucketdigest.shared.bucket_settings import read_settings
from bucketdigest.shared.chain import cascade
from bucketdigest.shared.errors import CorruptRecord, NotFound
from bucketdigest.shared.filetypes import UnsupportedFileType, file_type
from bucketdigest.shared.pending import write_request
from bucketdigest.shared.records import DigestRecords, DocumentSettings
from bucketdigest.shared.result import ResultZip, damage
from bucketdigest.shared.store import Store
from bucketdigest.shared.tickets import rebuild_ticket
from bucketdigest.worker.digesters import CHAIN
from bucketdigest.worker.output_state import plan, reset
from bucketdigest.worker.package import read_records


@dataclass
class ReprocessReport:
    requeued: dict[str, list[str]] = field(default_factory=dict)
    """Digest → the digesters that will run again."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Digest → why nothing was requeued."""


def outdated_digesters(records: DigestRecords | None) -> list[str]:
    """Digesters whose recorded version differs from the running one, or with no record."""
    recorded = {} if records is None else {r.digester: r.digester_version for r in records.outputs}
    return [d.name for d in CHAIN if recorded.get(d.name) != d.version]


def _made_with(archive: Path) -> tuple[int, DocumentSettings | None]:
    """The chain version of the bucket's settings a result was made with (0: before any),
    and the document's own settings it was made with."""
    with ResultZip(archive) as result:
        provenance = result.info().get("provenance") or {}
    own = provenance.get("document_settings")
    try:
        settings = DocumentSettings.from_json(json.dumps(own).encode()) if own else None
    except CorruptRecord:
        settings = None
    return int(provenance.get("chain_settings_version", 0)), settings


def done_digests(store: Store) -> list[str]:
    return [keys.parse_out_key(info.key) for info in store.list(keys.OUT_PREFIX)]


def _reprocess_one(
    store: Store,
    digest: str,
    digester: str | None,
    outdated: bool,
    settings: DocumentSettings | None = None,
) -> tuple[list[str], str]:
    """(digesters to run again, "") or ([], reason for skipping)."""
    ticket = rebuild_ticket(store, digest)
    if ticket is None:
        return [], "its source is not in the store"
    try:
        kind = file_type(ticket.ext)
    except UnsupportedFileType as exc:
        return [], str(exc)
    with tempfile.TemporaryDirectory(prefix="bucketdigest-reprocess-") as scratch:
        archive = Path(scratch) / "result.zip"
        try:
            store.download(keys.out_key(digest), archive)
        except NotFound:
            return [], "it is not done (no result zip)"
        damaged = damage(archive) is not None
        previous = None if damaged else read_records(archive)
        made_at, made_for = (0, None) if damaged else _made_with(archive)
    chosen: list[str] = []
    if damaged or settings is not None:  # the whole chain makes the result again
        chosen = [d.name for d in CHAIN]
    if settings is not None:  # over what the document was made with
        settings = replace(made_for or settings, **settings.chosen())
    ticket = replace(ticket, settings=settings or made_for)
    if digester is not None:
        chosen += [name for name in cascade(digester) if name not in chosen]
    if outdated:
        chosen += [name for name in outdated_digesters(previous) if name not in chosen]
        if made_at != read_settings(store)[0].chain_version:  # made with other chain settings
            chosen += [name for name in cascade(CHAIN[0].name) if name not in chosen]
    if not chosen:
        return [], "up to date"
    now = store.now()
    records = plan(CHAIN, kind, now, previous.by_output() if previous else None)
    for output, record in records.items():
        if record.digester in chosen:
            records[output] = reset(record, now)
    write_request(
        store, DigestRecords(digest=digest, file_type=str(kind), outputs=tuple(records.values()))
    )
    queue.enqueue(store, ticket)
    return chosen, ""


def reprocess(
    store: Store,
    digests: Iterable[str],
    digester: str | None,
    outdated: bool,
    settings: DocumentSettings | None = None,
) -> ReprocessReport:
    """Request reprocessing of ``digests`` (validated hashes) for ``digester`` (with its
    cascade) and/or, with ``outdated``, every digester whose version changed; with
    ``settings``, the whole chain with those settings of the document's own (a document keeps
    the ones it was made with otherwise)."""
    report = ReprocessReport()
    for digest in digests:
        chosen, reason = _reprocess_one(store, digest, digester, outdated, settings)
        if chosen:
            report.requeued[digest] = chosen
        else:
            report.skipped[digest] = reason
    return report
