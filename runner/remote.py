"""Sending documents to a bucket through its server (``serve --allow-writes``) with a token
that may upload, without bucket credentials: ``bucketdigest upload``, :func:`upload_files`.

Files go in requests of at most ``request_bytes`` (a file larger than that alone), streamed
from disk; each document's state is then followed at the URL the server answered with."""

from __future__ import annotations

import mimetypes
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import httpx

from bucketdigest.ingestor.inbox import unreadable_type
from bucketdigest.ingestor.scan import FileFilter, scan_folder
from bucketdigest.shared.errors import BucketdigestError, SourceError
from bucketdigest.shared.filetypes import SUPPORTED_EXTENSIONS
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.records import FileError

REQUEST_BYTES = 64 << 20
"""The most bytes of files one request carries (the server's ``--max-upload`` is 512 MiB by
default; smaller requests make progress visible and a failed one cheap to send again)."""
FINAL_STATES = frozenset({"done", "failed"})


class UploadRefused(BucketdigestError):
    """The server refused an upload: the reason it gave, with its status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Uploaded:
    """A document the server took: its name, hash, state then, and where its state is."""

    name: str
    digest: str
    state: str
    url: str


def files_to_send(
    given: Sequence[Path], names: Sequence[str] | None = None
) -> tuple[list[Path], list[str]]:
    """The files ``given`` stand for, with their names: a file by its name (or its entry in
    ``names``), a folder's files of the types bucketdigest reads, each under its path from
    the folder's parent (``scans/2026/a.pdf``). SourceError for names that do not match."""
    paths: list[Path] = []
    chosen: list[str] = []
    for path in given:
        if path.is_dir():
            for item in scan_folder(path, FileFilter(exts=SUPPORTED_EXTENSIONS)):
                if isinstance(item, FileError):
                    raise SourceError(f"{path / item.path}: {item.reason}")
                paths.append(item.path)
                chosen.append(f"{path.resolve().name}/{item.relative}")
        else:
            paths.append(path)
            chosen.append(path.name)
    if names is not None:
        if len(names) != len(given) or len(paths) != len(given):
            raise SourceError(f"{len(names)} names for {len(paths)} files: give one per file")
        chosen = list(names)
    return paths, chosen


def upload_files(
    server: str,
    token: str,
    files: Sequence[Path],
    *,
    names: Sequence[str] | None = None,
    priority: Priority = Priority.NORMAL,
    request_bytes: int = REQUEST_BYTES,
    on_sent: Callable[[list[Uploaded]], None] = lambda _: None,
    client: httpx.Client | None = None,
) -> list[Uploaded]:
    """Send ``files`` (named ``names``, default their file names) to the server at
    ``server``. SourceError before anything is sent for a file that is missing, empty or of a
    type no digester takes; UploadRefused when the server refuses a request (the requests
    before it were taken)."""
    chosen = list(names) if names is not None else [f.name for f in files]
    if len(chosen) != len(files):
        raise SourceError(f"{len(chosen)} names for {len(files)} files: give one per file")
    for path, name in zip(files, chosen, strict=True):
        if not path.is_file():
            raise SourceError(f"{path}: no such file")
        if (reason := unreadable_type(name)) is not None or path.stat().st_size == 0:
            raise SourceError(f"{path}: {reason or 'an empty file'}")
    own = client is None
    client = client or httpx.Client(timeout=httpx.Timeout(30, read=600, write=600))
    taken: list[Uploaded] = []
    try:
        for batch in _batches(list(zip(files, chosen, strict=True)), request_bytes):
            sent = _send(client, server, token, batch, priority)
            on_sent(sent)
            taken += sent
    except httpx.HTTPError as exc:
        raise UploadRefused(f"{server}: cannot reach the server ({exc})", 0) from exc
    finally:
        if own:
            client.close()
    return taken


def _batches(files: list[tuple[Path, str]], request_bytes: int) -> Iterator[list[tuple[Path, str]]]:
    batch: list[tuple[Path, str]] = []
    size = 0
    for path, name in files:
        length = path.stat().st_size
        if batch and size + length > request_bytes:
            yield batch
            batch, size = [], 0
        batch.append((path, name))
        size += length
    if batch:
        yield batch


def _send(
    client: httpx.Client,
    server: str,
    token: str,
    batch: list[tuple[Path, str]],
    priority: Priority,
) -> list[Uploaded]:
    with ExitStack() as opened:
        parts = [
            (
                "files",
                (
                    path.name,
                    opened.enter_context(open(path, "rb")),
                    mimetypes.guess_type(path.name)[0] or "application/octet-stream",
                ),
            )
            for path, _ in batch
        ]
        answer = client.post(
            urljoin(server, "/api/documents"),
            files=parts,
            data={"names": [name for _, name in batch], "priority": priority.value},
            headers={"Authorization": f"Bearer {token}"},
        )
    if answer.status_code != 202:
        raise UploadRefused(
            f"{server} refused the upload ({answer.status_code}): {_detail(answer)}",
            answer.status_code,
        )
    return [
        Uploaded(d["name"], d["digest"], d["state"], urljoin(server, d["url"]))
        for d in answer.json()["documents"]
    ]


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return answer.text[:300]


def follow(
    token: str,
    uploaded: Sequence[Uploaded],
    *,
    timeout: float | None = None,
    every: float = 2.0,
    on_change: Callable[[Uploaded, str], None] = lambda *_: None,
    client: httpx.Client | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Follow each document's state until every one is done or failed (or ``timeout``
    seconds pass): the last state seen, by hash; ``on_change`` hears each change."""
    own = client is None
    client = client or httpx.Client(timeout=30)
    states = {u.digest: u.state for u in uploaded}
    deadline = None if timeout is None else clock() + timeout
    try:
        while True:
            for document in uploaded:
                if states[document.digest] in FINAL_STATES:
                    continue
                answer = client.get(document.url, headers={"Authorization": f"Bearer {token}"})
                if (
                    answer.status_code == 200
                    and (now := answer.json()["state"]) != states[document.digest]
                ):
                    states[document.digest] = now
                    on_change(document, now)
            if all(s in FINAL_STATES for s in states.values()):
                return states
            if deadline is not None and clock() >= deadline:
                return states
            sleep(every)
    finally:
        if own:
            client.close()
