"""Serving from several processes, each accepting connections on a socket of its own.

uvicorn's own workers share one listening socket, and a worker's event loop accepts every
connection waiting when it wakes: 20 clients connecting at once all went to one process of two
(16 and 4 connections seen), which then answered nearly every search while the other idled,
and keep-alive connections stay where they landed. Here each process binds the port with
``SO_REUSEPORT``, so the kernel spreads new connections across the processes by their
addresses. Where the kernel does not balance so (not Linux), uvicorn's workers serve.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import signal
import socket
import sys
import threading
from typing import Any

from bucketdigest.shared.lifeline import exit_with_parent

log = logging.getLogger(__name__)

STOP_SECONDS = 30
"""How long a stopping server gives its processes to finish the requests they are answering."""


def balances_connections() -> bool:
    """Whether processes binding one port with ``SO_REUSEPORT`` share its connections (Linux
    spreads them; other systems give them to one socket, or lack the option)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _port_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` that other processes may bind as well."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bound = socket.socket(family, socket.SOCK_STREAM)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    bound.bind((host, port))
    return bound


def _serve_one(make_app: Any, settings: Any, host: str, port: int, options: dict[str, Any]) -> None:
    """One process: ``make_app(settings)`` served on its own socket of ``host:port``."""
    import uvicorn

    exit_with_parent()
    listening = _port_socket(host, port)
    uvicorn.Server(uvicorn.Config(make_app(settings), **options)).run(sockets=[listening])


def serve_from_processes(
    make_app: Any, settings: Any, host: str, port: int, processes: int, options: dict[str, Any]
) -> None:
    """Serve ``make_app(settings)`` (both picklable) from ``processes`` processes until
    interrupted (Ctrl-C or SIGTERM); a process that dies is started again. ``options`` go to
    ``uvicorn.Config``."""
    reserved = _port_socket(host, port)  # holds the port (0: a free one) for the processes
    port = reserved.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()

    def started() -> multiprocessing.process.BaseProcess:
        process = context.Process(
            target=_serve_one,
            args=(make_app, settings, host, port, options),
            name="bucketdigest-serve",
        )
        process.start()
        return process

    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    running = [started() for _ in range(processes)]
    try:
        while not stop.is_set():
            multiprocessing.connection.wait([p.sentinel for p in running], timeout=0.5)
            for place, process in enumerate(running):
                if process.exitcode is not None and not stop.is_set():
                    log.warning(
                        "a server process left (exit code %s): starting another",
                        process.exitcode,
                    )
                    running[place] = started()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        for process in running:
            process.terminate()  # uvicorn finishes the requests it is answering
        for process in running:
            process.join(STOP_SECONDS)
            if process.is_alive():
                process.kill()
        reserved.close()
