"""The result of the document a new revision supersedes (``Ticket.supersedes``), from which
digesters take the work done on pages and chunks that did not change: Markdown and OCR text of
pages with equal fingerprints, embeddings of chunks with equal text.

What each digester took and what it computed is recorded in its output's content as
``from_predecessor`` (``{"digest", "reused", "recomputed"}``) in ``digests.json``.
"""

from __future__ import annotations

import json
import zipfile
from functools import cached_property
from pathlib import Path
from typing import Any

from bucketdigest.shared import keys
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus, Ticket
from bucketdigest.shared.result import DIGESTS, INFO, PAGE_INDEX, ResultZip
from bucketdigest.shared.store import Store


def download_predecessor(store: Store, ticket: Ticket, workdir: Path) -> Path | None:
    """The result zip of the document ``ticket`` supersedes, downloaded; None when there is
    none (not a revision, or its predecessor is not done or was purged)."""
    if not ticket.supersedes:
        return None
    dest = workdir / "predecessor.zip"
    try:
        store.download(keys.out_key(ticket.supersedes), dest)
    except NotFound:
        return None
    return dest


def page_index_json(
    fingerprints: list[str],
    headers: list[list[tuple[int, int]]],
    running: list[dict[str, list[str]]],
    engines: list[str],
) -> bytes:
    """``pages.json``: per page its fingerprint, headers (line, font size), running heads
    taken out and the engine that converted it."""
    data = {
        "fingerprints": fingerprints,
        "headers": headers,
        "running": running,
        "engines": engines,
    }
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()


def read_page_index(raw: bytes | None) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """(fingerprints, headers) of a ``pages.json``; empty lists when there is none."""
    data = json.loads(raw) if raw else {}
    headers = [[(int(n), int(size)) for n, size in page] for page in data.get("headers", [])]
    return list(data.get("fingerprints", [])), headers


class Predecessor:
    """Reads a predecessor's result zip."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self._result = ResultZip(archive)
        self.names = set(self._result.names())

    def read(self, name: str) -> bytes | None:
        return self._result.read(name)

    @cached_property
    def digest(self) -> str:
        info = json.loads(self.read(INFO) or b"{}")
        return str(info.get("digest", ""))

    @cached_property
    def records(self) -> DigestRecords | None:
        raw = self.read(DIGESTS)
        return DigestRecords.from_json(raw) if raw is not None else None

    def completed(self, output: str) -> OutputRecord | None:
        """The predecessor's record of ``output`` if it completed."""
        records = self.records.outputs if self.records is not None else ()
        found = next((r for r in records if r.output == output), None)
        return found if found is not None and found.status is OutputStatus.COMPLETED else None

    @cached_property
    def page_index(self) -> tuple[list[str], list[list[tuple[int, int]]]]:
        """Its pages' fingerprints and headers (none for non-PDFs and older results)."""
        return read_page_index(self.read(PAGE_INDEX))

    @cached_property
    def engines(self) -> list[str]:
        """The engine that converted each of its pages (none for older results)."""
        raw = self.read(PAGE_INDEX)
        return list(json.loads(raw).get("engines", [])) if raw else []

    @cached_property
    def running(self) -> list[dict[str, list[str]]]:
        """Its pages' running header and footer lines (none for older results)."""
        raw = self.read(PAGE_INDEX)
        return list(json.loads(raw).get("running", [])) if raw else []

    @property
    def fingerprints(self) -> list[str]:
        return self.page_index[0]

    @cached_property
    def pages_by_fingerprint(self) -> dict[str, int]:
        """Page number (1-based) by fingerprint; the first page when several are equal."""
        found: dict[str, int] = {}
        for number, fingerprint in enumerate(self.fingerprints, start=1):
            found.setdefault(fingerprint, number)
        return found

    def tally(self, reused: int, recomputed: int) -> dict[str, Any]:
        """The ``from_predecessor`` entry of an output's content."""
        return {"digest": self.digest, "reused": reused, "recomputed": recomputed}


def open_predecessor(archive: Path | None) -> Predecessor | None:
    """The predecessor of a digest context, when it has one that can be read."""
    if archive is None:
        return None
    try:
        return Predecessor(archive)
    except (OSError, zipfile.BadZipFile):
        return None
