"""The drop-in conversion APIs' overhead: the same real PDFs (10 pages or more) converted by a
plain ``bucketdigest run`` with one worker, and sent one at a time to ``serve``'s docling-serve
route (``POST /v1/convert/file``, synchronous, as Open WebUI sends them) with one ``work``
process behind it; the overhead is what the API costs over the run, per document."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from common import CLI, table
from corpus import fetch, page_count

from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token

DOCUMENTS = 8
SERVER_TOKEN = "b" * 24


def _documents(quick: bool) -> list[Path]:
    found = sorted(
        (path for path, _ in fetch() if path.suffix.lower() == ".pdf"), key=lambda p: p.name
    )
    chosen = [p for p in found if 10 <= page_count(p) <= 40]
    return [min(chosen, key=page_count)] if quick else chosen[:DOCUMENTS]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _plain_run(folder: Path, root: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [*CLI, "run", str(folder), "--workers", "1", "--bucket", str(root / "run-bucket")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _through_api(documents: list[Path], root: Path) -> tuple[float, int]:
    bucket = root / "api-bucket"
    token, _ = add_token(LocalStore(bucket), "bench", (Scope.UPLOAD,))
    port = _free_port()
    env = {**os.environ, "BUCKETDIGEST_SERVE_TOKEN": SERVER_TOKEN}
    server = subprocess.Popen(
        [*CLI, "serve", "--bucket", str(bucket), "--port", str(port), "--processes", "1",
         "--allow-writes", "--sync-wait", "900"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    worker = subprocess.Popen(
        [*CLI, "work", "--bucket", str(bucket), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        started = time.perf_counter()
        succeeded = 0
        for path in documents:
            with open(path, "rb") as handle:
                answer = httpx.post(
                    f"{url}/v1/convert/file",
                    files={"files": (path.name, handle, "application/pdf")},
                    headers={"X-Api-Key": token},
                    timeout=1200,
                )
            succeeded += answer.status_code == 200 and answer.json()["status"] == "success"
        return time.perf_counter() - started, succeeded
    finally:
        worker.terminate()
        server.terminate()
        worker.wait(timeout=120)
        server.wait(timeout=60)


def run(quick: bool) -> str:
    documents = _documents(quick)
    pages = sum(page_count(p) for p in documents)
    with tempfile.TemporaryDirectory(prefix="bd-api-bench-") as name:
        root = Path(name)
        folder = root / "pdfs"
        folder.mkdir()
        for path in documents:
            shutil.copy(path, folder / path.name)
        plain = _plain_run(folder, root)
        api, succeeded = _through_api(documents, root)
    overhead = (api - plain) / plain
    rows = [
        ("`bucketdigest run --workers 1`", len(documents), pages, f"{plain:.1f}",
         f"{plain / len(documents):.2f}", "—"),
        ("`POST /v1/convert/file`, one at a time, 1 worker", succeeded, pages, f"{api:.1f}",
         f"{api / len(documents):.2f}", f"{overhead:+.1%}"),
    ]  # fmt: skip
    return (
        f"{len(documents)} real-world PDFs of 10 to 40 pages ({pages} pages). The run's time "
        "includes starting its worker and indexing at the end; the API's runs from the first "
        "request to the last answer, its worker already waiting.\n\n"
        + table(("how", "documents done", "pages", "seconds", "s / document", "overhead"), rows)
    )
