"""Helpers shared by the benchmarks: machine description, timing, moto, markdown tables."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import boto3
from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "bucketdigest"]

for _name, _value in {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ.setdefault(_name, _value)


logging.getLogger("werkzeug").setLevel(logging.ERROR)


def machine() -> str:
    """One line: CPU, cores, memory, OS, Python, PyMuPDF."""
    import pymupdf

    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as handle:
        memory = int(handle.readline().split()[1]) // (1024 * 1024)
    return (
        f"{cpu}, {os.cpu_count()} cores, {memory} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, PyMuPDF {pymupdf.__version__}"
    )


def timed(command: Sequence[str], **kwargs: object) -> float:
    """Wall-clock seconds of a command, which must succeed."""
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - started


@contextmanager
def moto_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def new_bucket(endpoint: str) -> str:
    name = f"bench-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
