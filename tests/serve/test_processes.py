"""``serve --processes N``: N processes answer requests, so two searches run at once (a search
holds its process while Lance scans), each with the settings the command was given."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.serve.conftest import Served
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in found]


def test_serve_answers_from_several_processes_with_the_same_settings(served: Served) -> None:
    port = _free_port()
    command = ["serve", "--bucket", served.settings.bucket, "--port", str(port)]
    server = subprocess.Popen(
        [*CLI, *command, "--processes", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    workers: list[int] = []
    try:

        def up() -> bool:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                return httpx.get(f"{url}/api/healthz").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, "the server did not start", every=0.3)
        workers[:] = [c for c in _children(server.pid) if "spawn_main" in _cmdline(c)]
        assert len(workers) == 2, workers

        # clients connecting at once are spread over both processes (keep-alive
        # connections stay where they land: one process answering all would idle the other)
        clients = [httpx.Client(base_url=url) for _ in range(40)]
        at_once = threading.Barrier(len(clients))

        def connect(client: httpx.Client) -> None:
            at_once.wait(30)
            client.get("/api/healthz").raise_for_status()

        try:
            with ThreadPoolExecutor(len(clients)) as pool:
                list(pool.map(connect, clients))
            held = [len(_connections(pid, port)) for pid in workers]
        finally:
            for client in clients:
                client.close()
        assert sum(held) == 40 and min(held) >= 8, held

        def search(query: str) -> httpx.Response:
            return httpx.get(f"{url}/api/search/chunks", params={"q": query}, timeout=60)

        queries = ["boarding the enemy ship", "wrestling holds", "barley harvest"] * 4
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(search, queries))
        assert all(a.status_code == 200 for a in answers)
        assert answers[0].json()["hits"][0]["names"] == ["naval/broadsides.md"]
        # the settings reached every process: anonymous answers hold no source folder
        folder = str(Path(served.settings.bucket).parent / "in")
        assert all(folder not in a.text for a in answers)

        # a server killed outright takes its processes with it: none keeps the port
        server.kill()
        server.wait(timeout=30)
        wait_until(lambda: not any(_alive(pid) for pid in workers), "a worker outlived its server")
    finally:
        server.kill()
        server.wait(timeout=30)
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _connections(pid: int, port: int) -> set[int]:
    """The sockets of ``pid`` that are connections accepted on ``port`` (their inodes)."""
    accepted = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].split(":")[1], 16)
        if local_port == port and fields[3] == "01":  # established
            accepted.add(int(fields[9]))
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            held.add(int(target[8:-1]))
    return accepted & held


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
