"""The result zip: every completed output's files, ``document.md``, ``info.json`` and
``digests.json``. Deterministic bytes.

Members are written in sorted order with a fixed timestamp and permissions, so the same outputs
and the same ``info`` always give the same bytes (``info`` and the records say who digested the
document and when, so two runs differ only there). Checkpoints of work in progress
(``work/<hash>/checkpoint-<n>.zip``) use the same writer.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bucketdigest.shared.archives import member_path
from bucketdigest.shared.pagetext import document_pages
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus, Ticket
from bucketdigest.shared.result import DIGESTS, DOCUMENT, INFO

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_COMPRESSED = (".png", ".jpg", ".jpeg", ".npy")
"""Stored as they are: deflating them again costs CPU and saves little."""


def json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _member(name: str, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    compressed = name.lower().endswith(_COMPRESSED)
    info.compress_type = zipfile.ZIP_STORED if compressed else zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info, data


def info(
    ticket: Ticket, records: DigestRecords, text: OutputRecord, provenance: Mapping[str, Any]
) -> dict[str, Any]:
    """``info.json``: what the document is, what its text output found (``text``: the primary
    output's record), every output's status, the problems, and who made it when."""
    markdown = text.content or {}
    metadata = dict(markdown.get("metadata", {}))
    urls = [name for name in ticket.names if name.startswith(("http://", "https://"))]
    if urls and "url" not in metadata:  # a crawled page is named by its URL
        metadata["url"] = urls[0]
    failed = [
        f"{r.output} failed: {r.error}" for r in records.outputs if r.status is OutputStatus.FAILED
    ]
    found = [
        problem
        for r in records.outputs
        if r.status is OutputStatus.COMPLETED
        and r.output != text.output
        and isinstance(r.content, dict)
        for problem in r.content.get("problems", [])
    ]
    return {
        "digest": ticket.digest,
        "ext": ticket.ext,
        "file_type": records.file_type,
        "size": ticket.size,
        "names": list(ticket.names),
        "supersedes": ticket.supersedes or None,
        "pages": markdown.get("pages", 0),
        "metadata": metadata,
        "converter": markdown.get("converter", {}),
        "problems": [*markdown.get("problems", []), *found, *failed],
        "converter_messages": markdown.get("converter_messages", ""),
        "outputs": {r.output: r.status.value for r in records.outputs},
        "provenance": dict(provenance),
    }


def build_members(records: DigestRecords, tree: Path, info: Mapping[str, Any]) -> dict[str, bytes]:
    """Every member of the result zip, by name: completed outputs' files read from ``tree``."""
    members: dict[str, bytes] = {}
    for record in records.outputs:
        if record.status is OutputStatus.COMPLETED:
            for name in record.artifacts:
                members[name] = member_path(tree, name).read_bytes()
    pages = [page + "\n" for page in document_pages(tree)]
    members[DOCUMENT] = "\n".join(pages).encode()
    members[INFO] = json_bytes(info)
    members[DIGESTS] = records.to_json()
    return members


def write_zip(members: Mapping[str, bytes], dest: Path) -> Path:
    """Write ``members`` to ``dest`` in a reproducible way and return ``dest``."""
    with zipfile.ZipFile(dest, "w") as archive:
        for name in sorted(members):
            archive.writestr(*_member(name, members[name]))
    return dest


def read_members(archive: Path, names: Iterable[str] | None = None) -> dict[str, bytes]:
    """Members of a zip by name (all of them, or those of ``names`` present)."""
    with zipfile.ZipFile(archive) as zipped:
        present = set(zipped.namelist())
        wanted = present if names is None else present & set(names)
        return {name: zipped.read(name) for name in sorted(wanted)}


def read_records(archive: Path) -> DigestRecords | None:
    """The ``digests.json`` of a result zip; None for results made before the digest chain."""
    members = read_members(archive, [DIGESTS])
    return DigestRecords.from_json(members[DIGESTS]) if DIGESTS in members else None
