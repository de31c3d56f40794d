"""A light HTTP load generator: ``clients`` keep-alive connections on one asyncio loop, each
sending GETs one after another for a while. Light so that what the benchmark measures is the
server: twenty threads of an HTTP client library in the benchmark's process took a third of
the same two cores."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlencode


async def _client(
    host: str, port: int, paths: list[str], stop: float, samples: list[float], *, again: bool
) -> None:
    """Ask ``paths`` in turn until ``stop`` (``again``: from the start once all were asked;
    otherwise the client stops there)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        n = 0
        while time.perf_counter() < stop and (again or n < len(paths)):
            path = paths[n % len(paths)]
            n += 1
            started = time.perf_counter()
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            if status != 200:
                raise RuntimeError(f"GET {path}: HTTP {status}")
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        writer.close()


def searches_under_load(
    host: str,
    port: int,
    route: str,
    queries: list[str],
    clients: int,
    seconds: float,
    *,
    shared: bool = True,
) -> tuple[list[float], float]:
    """(latencies in ms, elapsed seconds) of ``clients`` connections asking ``route`` the
    queries in turn for ``seconds``: each client starting at its own offset of the whole
    list (``shared``: the clients ask the same queries one step apart, as people search for
    the same things, from the start again once all were asked), or each its own share of the
    list once, so that no query is asked twice (a client whose share is done stops, and the
    elapsed time ends with the last client)."""
    paths = [f"{route}?{urlencode({'q': query})}" for query in queries]

    def walk(client: int) -> list[str]:
        if shared:
            return paths[client:] + paths[:client]
        return paths[client::clients]

    async def main() -> tuple[list[float], float]:
        samples: list[float] = []
        began = time.perf_counter()
        stop = began + seconds
        await asyncio.gather(
            *(
                _client(host, port, walk(client), stop, samples, again=shared)
                for client in range(clients)
            )
        )
        return samples, time.perf_counter() - began

    return asyncio.run(main())
