"""``serve`` checks its port before it starts: taken by a listening server, a one-line error;
left by a server just stopped (its connections in TIME_WAIT), free, as uvicorn finds it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bucketdigest.serve.app import _check_can_serve
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import ConfigError


def _settings(tmp_path: Path, port: int) -> ServeSettings:
    return ServeSettings(store=StoreSettings(bucket=str(tmp_path)), port=port)


def test_a_port_a_server_listens_on_is_refused_and_one_it_just_left_is_not(
    tmp_path: Path,
) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    with pytest.raises(ConfigError, match=f"cannot serve on 127.0.0.1:{port}"):
        _check_can_serve(_settings(tmp_path, port))

    # the server closes a connection first, so its side of it waits in TIME_WAIT
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()
    server.close()
    client.recv(1)
    client.close()
    _check_can_serve(_settings(tmp_path, port))
