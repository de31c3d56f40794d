"""uvicorn's HTTP/1.1 protocol with Nagle's algorithm off on every connection.

A listening socket that uvicorn binds itself (to share it between ``--processes``) has
protocol number 0, and asyncio turns Nagle off only for sockets whose protocol is TCP's: each
answer then waited for the client's delayed ACK, 40 ms a request (a 12 ms search took 56).
Imported by :func:`bucketdigest.serve.app.run_server` alone (uvicorn loads when serving)."""

from __future__ import annotations

import socket
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class NoDelayH11Protocol(H11Protocol):
    def connection_made(self, transport: Any) -> None:
        connection = transport.get_extra_info("socket")
        if connection is not None and connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
