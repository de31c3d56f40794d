"""Uploads over HTTP, through the real server (``bucketdigest serve --allow-writes``): many files
at once, followed to done by their state URLs; an upload over ``--max-upload`` refused with
413 while the server's memory stays flat; a request without a token, or with one that may
only read, refused; files no digester takes, empty ones and unusable names refused, naming
the file."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]
SERVER_TOKEN = "the-server-token-0123456789"
MAX_UPLOAD_MIB = 8


@dataclass(frozen=True)
class Server:
    url: str
    bucket: Path
    pid: int
    upload_token: str
    read_token: str

    def rss_kib(self) -> int:
        """The server process's resident memory."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    bucket = tmp_path_factory.mktemp("uploads") / "bucket"
    store = LocalStore(bucket)
    upload_token, _ = add_token(store, "scanner", (Scope.UPLOAD,))
    read_token, _ = add_token(store, "visitor", (Scope.READ,))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            *CLI, "serve", "--bucket", str(bucket), "--port", str(port), "--processes", "1",
            "--allow-writes", "--max-upload", str(MAX_UPLOAD_MIB),
        ],
        env={**os.environ, "BUCKETDIGEST_SERVE_TOKEN": SERVER_TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            return httpx.get(f"{url}/api/healthz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(up, "the server did not start", every=0.3)
        yield Server(url, bucket, process.pid, upload_token, read_token)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_many_files_at_once_are_queued_and_their_state_urls_reach_done(
    server: Server, tmp_path: Path
) -> None:
    pdfs = [
        make_pdf(tmp_path / f"r{n}.pdf", title=f"Upload {n}", pages=1, seed=900 + n)
        for n in range(5)
    ]
    notes = tmp_path / "notes.md"
    notes.write_text("# Field notes\n\nThe heron nests by the weir.\n")
    files = [("files", (p.name, p.read_bytes(), "application/pdf")) for p in pdfs]
    files.append(("files", ("notes.md", notes.read_bytes(), "text/markdown")))
    names = [f"2026/{p.name}" for p in pdfs] + ["field/notes.md"]

    answer = httpx.post(
        f"{server.url}/api/documents",
        files=files,
        data={"names": names, "priority": "high"},
        headers=_auth(server.upload_token),
        timeout=60,
    )

    assert answer.status_code == 202, answer.text
    documents = answer.json()["documents"]
    assert [d["name"] for d in documents] == names
    for document, path in zip(documents, [*pdfs, notes], strict=True):
        assert document["digest"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert document["state"] == "todo"
    state = httpx.get(server.url + documents[-1]["url"]).json()
    assert state["state"] == "todo" and state["names"] == ["field/notes.md"]

    work = subprocess.run(
        [*CLI, "work", "--bucket", str(server.bucket), "--exit-when-idle"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert work.returncode == 0, work.stderr

    def all_done() -> bool:
        return all(httpx.get(server.url + d["url"]).json()["state"] == "done" for d in documents)

    wait_until(all_done, "the uploads did not reach done", seconds=30, every=0.5)
    markdown = httpx.get(f"{server.url}{documents[-1]['url']}/markdown").text
    assert "The heron nests by the weir." in markdown


def test_an_upload_over_the_limit_is_refused_with_413_and_memory_stays_flat(
    server: Server,
) -> None:
    before = server.rss_kib()
    # declared: refused before a byte of the body is sent
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(
            (
                f"POST /api/documents HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {server.upload_token}\r\n"
                "Content-Type: multipart/form-data; boundary=b\r\n"
                f"Content-Length: {600 << 20}\r\n\r\n"
            ).encode()
        )
        answer = b""
        while not answer.endswith(b"}") and (more := connection.recv(65536)):
            answer += more
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert b"--max-upload" in answer

    # streamed without a length (chunked): 600 MiB, refused once past the limit
    def body() -> Iterator[bytes]:
        yield b'--b\r\nContent-Disposition: form-data; name="files"; filename="big.pdf"\r\n'
        yield b"Content-Type: application/pdf\r\n\r\n%PDF-1.7\n"
        block = b"0" * (1 << 20)
        for _ in range(600):
            yield block

    try:
        streamed = httpx.post(
            f"{server.url}/api/documents",
            content=body(),
            headers={
                **_auth(server.upload_token),
                "Content-Type": "multipart/form-data; boundary=b",
            },
            timeout=120,
        )
    except httpx.TransportError:  # the server may close the connection as it answers
        streamed = None
    if streamed is not None:
        assert streamed.status_code == 413, streamed.text
    assert server.rss_kib() - before < 64 << 10, "the server held the upload in memory"
    assert httpx.get(f"{server.url}/api/healthz").status_code == 200
    assert not list((server.bucket / "store" / "raw").glob("*")) or all(
        p.stat().st_size < MAX_UPLOAD_MIB << 20 for p in (server.bucket / "store" / "raw").iterdir()
    )


def test_an_upload_without_a_token_or_with_a_read_token_is_refused(
    server: Server, tmp_path: Path
) -> None:
    pdf = make_pdf(tmp_path / "a.pdf", title="Refused", pages=1, seed=950)
    files = [("files", ("a.pdf", pdf.read_bytes(), "application/pdf"))]
    anonymous = httpx.post(f"{server.url}/api/documents", files=files)
    assert anonymous.status_code == 401 and anonymous.json()["detail"]
    reader = httpx.post(
        f"{server.url}/api/documents", files=files, headers=_auth(server.read_token)
    )
    assert reader.status_code == 403
    assert "may not upload" in reader.json()["detail"]
    own = httpx.post(f"{server.url}/api/documents", files=files, headers=_auth(SERVER_TOKEN))
    assert own.status_code == 202, own.text
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    assert (server.bucket / "store" / "raw" / f"{digest}.pdf").exists()


@pytest.mark.parametrize(
    ("name", "content", "status", "reason"),
    [
        ("setup.exe", b"MZ", 415, "setup.exe: no digester handles .exe files"),
        ("empty.pdf", b"", 400, "empty.pdf: an empty file"),
        ("names=../../etc/passwd.pdf", b"%PDF-", 400, "'..' part"),
        ("names=/etc/passwd.pdf", b"%PDF-", 400, "a leading /"),
        ("README", b"text", 415, "README: a name without an extension"),
    ],
)
def test_a_file_that_cannot_be_taken_is_refused_naming_it(
    server: Server, name: str, content: bytes, status: int, reason: str
) -> None:
    given = name.removeprefix("names=")
    answer = httpx.post(
        f"{server.url}/api/documents",
        files=[("files", ("a.pdf" if given != name else name, content, "application/pdf"))],
        data={"names": given} if given != name else None,
        headers=_auth(server.upload_token),
    )
    assert answer.status_code == status, answer.text
    assert reason in answer.json()["detail"]


def test_a_file_name_sent_with_its_folders_is_named_by_its_last_part(
    server: Server, tmp_path: Path
) -> None:
    pdf = make_pdf(tmp_path / "w.pdf", title="Windows Path", pages=1, seed=962)
    answer = httpx.post(
        f"{server.url}/api/documents",
        files=[("files", ("C:\\Scans\\2026\\w.pdf", pdf.read_bytes(), "application/pdf"))],
        headers=_auth(server.upload_token),
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["documents"][0]["name"] == "w.pdf"


def test_the_upload_command_sends_files_and_folders_without_bucket_credentials(
    server: Server, tmp_path: Path
) -> None:
    scans = tmp_path / "scans"
    make_pdf(scans / "2026" / "a.pdf", title="Scanned A", pages=1, seed=960)
    (scans / "2026" / "skip.exe").write_bytes(b"MZ")  # a type nobody reads: left out
    loose = make_pdf(tmp_path / "loose.pdf", title="Loose", pages=1, seed=961)
    sent = subprocess.run(
        [*CLI, "upload", str(scans), str(loose), "--to", server.url, "--json"],
        env={**os.environ, "BUCKETDIGEST_TOKEN": server.upload_token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr
    documents = [json.loads(line) for line in sent.stdout.splitlines()]
    assert [d["name"] for d in documents] == ["scans/2026/a.pdf", "loose.pdf"]
    for document in documents:
        assert httpx.get(document["url"]).json()["names"] == [document["name"]]

    refused = subprocess.run(
        [*CLI, "upload", str(loose), "--to", server.url, "--token", server.read_token],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1
    assert "refused the upload (403)" in refused.stderr and "may not upload" in refused.stderr
