"""Every shell block of README.md and docs/ run as a reader types it, line by line through
``bash``, each block in a shell of its own, all in one home folder: what the commands print is
what they do, and each ends as the block says (exit 0).

What stands in for the reader's world is said in :func:`_stand_ins`: moto's server for the S3
buckets the blocks name, a Git LFS remote on disk for the repository, a site on 127.0.0.1 for
the web site, free ports for 8000 and 8080, the token the block's ``tokens add`` printed for
``bdw_...``, boto3 for ``aws s3 cp``. Commands that run until stopped (``serve``, ``work``,
``--watch``) run in the background until they have done what the block shows them for (a page
served, the documents converted, ingested), stay up for the rest of their block (an upload
needs its server) and then get Ctrl-C, after which they exit 0 like the others."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest

from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from tests.cli.test_documented_commands import _FENCE, _SHELL, DOCUMENTS
from tests.ingestor.conftest import LfsRemote
from tests.waiting import wait_until

BIN = Path(sys.executable).parent
BUCKETS = ("rulebooks", "library")
"""The S3 buckets the documents name (``s3://rulebooks/digest``...)."""
_LONG_RUNNING = re.compile(r"\bbucketdigest (serve|work)\b|--watch\b")
_TYPED = re.compile(r"^(?:\w+=\S+ )*(?:\.venv/bin/)?bucketdigest ", re.M)
"""A line that types a command (after any variables set for it)."""
_TOKEN = re.compile(r"\bbdw_[A-Za-z0-9_\-]{8,}")


def _blocks() -> list[tuple[str, list[str]]]:
    """The shell blocks that type a ``bucketdigest`` command, as their lines (continuations
    joined, comments and output left out), by document."""
    found = []
    for document in DOCUMENTS:
        for language, block in _FENCE.findall(document.read_text()):
            if language not in _SHELL or not _TYPED.search(block):
                continue  # a diagram that names a command is no shell block
            lines = [
                line
                for line in block.replace("\\\n", " ").splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
            found.append((document.name, lines))
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class World:
    """The reader's machine and network, as the test stands them in."""

    home: Path
    endpoint: str
    repository: str
    site: str
    ports: dict[str, int] = field(default_factory=lambda: {"8000": _free_port()})

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "AWS_ENDPOINT_URL": self.endpoint,
        }


def _stand_ins(world: World, line: str, token: str | None) -> str:
    """``line`` with the reader's world replaced by the test's."""
    line = line.replace(".venv/bin/bucketdigest", str(BIN / "bucketdigest"))
    line = line.replace("http://minio:9000", world.endpoint)
    line = line.replace("git@github.com:acme/rulebooks.git", world.repository)
    line = line.replace("https://example.org/docs/", world.site)
    line = line.replace("127.0.0.1:8000", f"127.0.0.1:{world.ports['8000']}")
    for port in re.findall(r"--port (\d+)", line):
        line = line.replace(
            f"--port {port}", f"--port {world.ports.setdefault(port, _free_port())}"
        )
    if re.search(r"\bbucketdigest serve\b", line) and "--port" not in line:
        line = re.sub(r"(\bbucketdigest serve)\b", rf"\1 --port {world.ports['8000']}", line)
    if "bdw_..." in line.split(" # ")[0]:  # not in a comment (`tokens add` "prints bdw_...")
        assert token is not None, f"{line}: no `tokens add` before it printed a token"
        line = line.replace("bdw_...", token)
    return line


def _copy_to_s3(world: World, line: str) -> None:
    """``aws s3 cp FILE s3://BUCKET/KEY``, done with boto3 (the AWS CLI is not ours to
    install)."""
    _, _, _, source, target = shlex.split(line)
    bucket, _, key = target.removeprefix("s3://").partition("/")
    client = boto3.client("s3", endpoint_url=world.endpoint)
    client.upload_file(str(world.home / source), bucket, key)


def _bucket_of(line: str, environment: dict[str, str]) -> str:
    found = re.search(r"--bucket (\S+)", line)
    bucket = found.group(1) if found else environment.get("BUCKETDIGEST_BUCKET", "")
    return bucket or "bucketdigest-data"


def _store(world: World, bucket: str) -> Store:
    """A bucket as the blocks name it: an ``s3://`` URL, or a folder of the home."""
    location = bucket if bucket.startswith("s3://") else str(world.home / bucket)
    return open_store(StoreSettings(bucket=location, endpoint_url=world.endpoint), self_test=False)


def _count(world: World, bucket: str, prefix: str) -> int:
    return sum(1 for _ in _store(world, bucket).list(prefix))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _served(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _ready(world: World, line: str, environment: dict[str, str]) -> Callable[[], bool]:
    """When a command that runs until stopped has done what its block shows it for."""
    bucket = _bucket_of(line, environment)
    if " serve" in line:
        port = int(re.findall(r"--port (\d+)", line)[-1])
        return lambda: _served(port)
    if "--watch" in line:  # every file of the folder stored (ingest) or converted (run)
        folder = world.home / shlex.split(line)[2].removeprefix("~/")
        files = [p for p in folder.iterdir() if p.is_file()]
        wanted = [
            keys.raw_key(_digest(p), p.suffix[1:])
            if " ingest " in line
            else keys.out_key(_digest(p))
            for p in files
        ]
        return lambda: all(_store(world, bucket).head(key) is not None for key in wanted)
    # work: every document the bucket holds has its result
    return lambda: (
        0 < _count(world, bucket, keys.RAW_PREFIX) <= _count(world, bucket, keys.OUT_PREFIX)
    )


@dataclass
class Running:
    """A command that runs until stopped, and the file its output goes to."""

    named: str
    process: subprocess.Popen[bytes]
    output: Path

    def said(self) -> str:
        return self.output.read_text(errors="replace")


def _stop(running: Running) -> None:
    """Ctrl-C, as a terminal sends it: to the command's whole process group."""
    os.killpg(running.process.pid, signal.SIGINT)
    try:
        running.process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        _kill(running)
        pytest.fail(f"{running.named}: still running 120 s after Ctrl-C")
    code = running.process.returncode
    assert code == 0, f"{running.named}: exit {code} after Ctrl-C\n{running.said()}"


def _kill(running: Running) -> None:
    if running.process.poll() is None:
        os.killpg(running.process.pid, signal.SIGKILL)
        running.process.wait()


def _start(
    world: World,
    line: str,
    environment: dict[str, str],
    named: str,
    ready: Callable[[], bool] | None = None,
) -> Running:
    """Start a command that runs until stopped; return once it is up (it has said something)
    and has done what it is shown for (``ready``, by default as :func:`_ready` judges)."""
    output = world.home.parent / "output" / f"{len(list(world.home.parent.glob('output/*')))}.log"
    output.parent.mkdir(exist_ok=True)
    with output.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-c", line], cwd=world.home, env=environment,
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    running = Running(named, process, output)
    ready = ready or _ready(world, line, environment)

    # a watcher is up once it says it is watching (the files may be done before: an earlier
    # block converted them), anything else once it has said something
    up = "watching" if "--watch" in line else ""

    def up_and_ready() -> bool:
        if process.poll() is not None:
            pytest.fail(f"{named}: exited early ({process.returncode}): {running.said()}")
        said = running.said()
        return bool(said.strip()) and up in said and ready()

    try:
        wait_until(up_and_ready, f"{named} never got going", 240, 0.5)
    except BaseException:
        _kill(running)
        raise
    return running


def _run_block(world: World, document: str, lines: list[str]) -> list[tuple[str, str]]:
    """Run one block's lines in order; each line with what it printed, for the checks."""
    environment = world.environment()
    token: str | None = None
    printed: list[tuple[str, str]] = []
    running: list[Running] = []
    try:
        for typed in lines:
            line = _stand_ins(world, typed, token)
            if line.startswith("export "):
                for assignment in shlex.split(line)[1:]:
                    name, _, value = assignment.partition("=")
                    if name != "AWS_ENDPOINT_URL":  # the stand-in's
                        environment[name] = value
                continue
            if line.startswith("aws s3 cp "):
                _copy_to_s3(world, line)
                continue
            if _LONG_RUNNING.search(line):
                for started in running:  # one at a time: they may share a port
                    _stop(started)
                running[:] = [_start(world, line, environment, f"{typed} ({document})")]
                continue
            done = subprocess.run(
                ["bash", "-c", line], cwd=world.home, env=environment, text=True,
                capture_output=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, (
                f"{typed} ({document}): exit {done.returncode}\n{done.stderr}"
            )
            printed.append((typed, done.stdout))
            if found := _TOKEN.search(done.stdout):
                token = found.group(0)
        for started in running:
            _stop(started)
    finally:
        for started in running:
            _kill(started)
    return printed


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Not on the test's output."""


@contextmanager
def _site(folder: Path) -> Iterator[str]:
    """A small site of the reader's kind, on 127.0.0.1: its ``/docs/`` URL."""
    pages = {
        "docs/index.html": '<a href="rules.html">Rules</a> <a href="archive/old.html">Old</a>',
        "docs/rules.html": "<h1>Rules</h1><p>" + "Grappling starts with an opposed roll. " * 20,
        "docs/archive/old.html": "<h1>Old rules</h1><p>" + "Superseded. " * 40,
    }
    for name, html in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"<!doctype html><html><body>{html}</body></html>")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/docs/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def world(tmp_path: Path, moto_endpoint: str) -> Iterator[World]:
    client = boto3.client("s3", endpoint_url=moto_endpoint)
    for name in BUCKETS:
        client.create_bucket(Bucket=name)
    home = tmp_path / "home"
    for index, name in enumerate(("pdfs/core.pdf", "pdfs/naval.pdf", "Scans/page.pdf")):
        make_pdf(home / name, title=Path(name).stem, pages=1, seed=index)
    make_pdf(home / "scan.pdf", title="Scan", pages=1, seed=7)
    (home / "notes.md").write_text("# Notes\n\nGrappling: roll initiative first.\n")
    (home / "Notes").mkdir()
    (home / "Notes" / "session.md").write_text("# Session\n\nThe naval combat went well.\n")
    repository = LfsRemote(bare=tmp_path / "remote.git", work=tmp_path / "work")
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repository.bare)], check=True)
    subprocess.run(
        ["git", "clone", "-q", repository.url, str(repository.work)],
        check=True,
        capture_output=True,
    )
    repository.git("lfs", "install", "--local")
    repository.git("lfs", "track", "rules/**")
    repository.add_pdf("rules/core.pdf", 11)
    repository.add_pdf("other/not-included.pdf", 12)
    repository.commit_and_push("rulebooks")
    # the guide's uploads are followed until done (--wait): a worker of the library's fleet
    (tmp_path / "fleet").mkdir()
    fleet = _start(
        World(tmp_path / "fleet", moto_endpoint, "", ""),
        f"{BIN / 'bucketdigest'} work --bucket s3://library/digest",
        {**os.environ, "AWS_ENDPOINT_URL": moto_endpoint},
        "the library's worker",
        ready=lambda: True,
    )
    try:
        with _site(tmp_path / "site") as site:
            yield World(home, moto_endpoint, repository.url, site)
        _stop(fleet)
    finally:
        _kill(fleet)
        for name in BUCKETS:
            bucket = boto3.resource("s3", endpoint_url=moto_endpoint).Bucket(name)
            bucket.objects.all().delete()
            bucket.delete()


def test_every_shell_block_of_the_documents_runs_as_written(world: World) -> None:
    blocks = _blocks()
    assert len(blocks) >= 10, "the documents' shell blocks were not found"
    printed = []
    for document, lines in blocks:
        printed += _run_block(world, document, lines)

    def said(command: str) -> str:
        """What the last line typing ``command`` printed."""
        return next(out for typed, out in reversed(printed) if typed.startswith(command))

    # what the blocks promise: results where they say, a search in JSON, a token, a policy
    assert _count(world, "bucketdigest-data", keys.OUT_PREFIX) >= 3, "./pdfs and ~/Scans"
    assert _count(world, "s3://rulebooks/digest", keys.OUT_PREFIX) == 2, "the fleet's two"
    stored = _count(world, "s3://rulebooks/digest", keys.RAW_PREFIX)
    assert stored == 2 + 1, "and rules/** of the repository, not the rest"
    assert isinstance(json.loads(said("bucketdigest search")), list), "the last search's --json"
    assert '"Statement"' in said("bucketdigest policy"), "policy printed no IAM policy"
    sent = json.loads(said("curl"))
    assert len(sent["documents"]) == 2 and sent["errors"] == [], sent
    assert _count(world, "s3://library/digest", keys.OUT_PREFIX) >= 3, "scan.pdf and the notes"
