"""A private library stays private: with ``serve --require-token`` every route but the health
check refuses a request without a read token, and serves it with one; a revoked token, or one
that may only work, is refused at once; browsers sign in; assistants send the token too."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bucketdigest.cli.main import cli
from bucketdigest.serve.access import COOKIE
from bucketdigest.serve.app import background_server, create_app, exposure
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.serve.docling_tasks import Task
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token, revoke_token
from tests.serve.conftest import Served

OPEN = {"/api/healthz", "/health", "/general/docs", "/signin", "/favicon.ico", "/favicon.svg"}
OWN_CHECK = ("/broker/",)
"""The broker's routes check work tokens themselves (tests/serve/test_broker_scope.py)."""


def _routes(routes: list[Any]) -> Iterator[tuple[str, str]]:
    """Every (method, path) the app answers (an included router's routes carry its prefix)."""
    for route in routes:
        if not hasattr(route, "path"):
            yield from _routes(route.original_router.routes)
            continue
        for method in sorted(getattr(route, "methods", None) or {"POST"}):
            if method != "HEAD":
                yield method, route.path


def _concrete(path: str, digest: str) -> str:
    task = Task((digest,), ("rulebooks/long.pdf",)).task_id
    values = {"digest": digest, "page": "1", "member:path": "info.json", "task_id": task}
    values["chunker"] = "hybrid"
    url = re.sub(r"\{([^}]+)\}", lambda m: values[m.group(1)], path)
    return url + "?q=rules" if "/search/" in url else url


@pytest.fixture
def private(served: Served, tmp_path: Path) -> Iterator[tuple[TestClient, LocalStore, Served]]:
    shutil.copytree(served.settings.bucket, tmp_path / "bucket")
    settings = StoreSettings(bucket=str(tmp_path / "bucket"))
    app = create_app(
        ServeSettings(store=settings, require_token=True, mcp=True, allowed_hosts=("testserver",))
    )
    with TestClient(app) as client:
        yield client, LocalStore(tmp_path / "bucket"), served


def test_every_route_refuses_a_request_without_a_read_token_and_serves_it_with_one(
    private: tuple[TestClient, LocalStore, Served],
) -> None:
    client, store, served = private
    digest = served.digests["rulebooks/long.pdf"]
    reader, _ = add_token(store, "anna", (Scope.READ,))
    worker, _ = add_token(store, "box", (Scope.WORK,))
    checked = 0
    for method, path in _routes(client.app.routes):
        if path in OPEN or path.startswith(OWN_CHECK) or "/static/" in path:
            continue
        url = _concrete(path, digest)
        for headers in ({}, {"Authorization": f"Bearer {worker}"}, {"X-Api-Key": "bdw_made_up"}):
            answer = client.request(method, url, headers=headers)
            assert answer.status_code == 401, (method, url, headers, answer.status_code)
        checked += 1
        if method == "GET" and path != "/mcp":
            answer = client.get(url, headers={"Authorization": f"Bearer {reader}"})
            assert answer.status_code == 200, (url, answer.status_code, answer.text[:200])
    assert checked >= 20, "the routes were walked"
    assert client.get("/api/healthz").status_code == 200
    found = client.get("/api/search/chunks?q=boarding", headers={"X-Api-Key": reader})
    assert found.status_code == 200 and found.json()["hits"]


def test_a_revoked_token_is_refused_at_once(
    private: tuple[TestClient, LocalStore, Served],
) -> None:
    client, store, _ = private
    reader, _ = add_token(store, "anna", (Scope.READ,))
    auth = {"Authorization": f"Bearer {reader}"}
    assert client.get("/api/status", headers=auth).status_code == 200
    revoke_token(store, "anna")
    assert client.get("/api/status", headers=auth).status_code == 401


def test_a_browser_signs_in_and_reads_with_its_session(
    private: tuple[TestClient, LocalStore, Served],
) -> None:
    client, store, _ = private
    reader, _ = add_token(store, "anna", (Scope.WRITE,))  # write includes read
    page = client.get("/status?x=1", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "This library is private" in page.text
    assert "name=next value='/status?x=1'" in page.text
    wrong = client.post("/signin", data={"token": "bdw_nope", "next": "/status"})
    assert wrong.status_code == 401 and COOKIE not in wrong.cookies
    signed = client.post(
        "/signin", data={"token": reader, "next": "//evil.example/"}, follow_redirects=False
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    assert "httponly" in signed.headers["set-cookie"].lower()
    assert "samesite=strict" in signed.headers["set-cookie"].lower()
    client.cookies.set(COOKIE, signed.cookies[COOKIE])
    assert client.get("/status", headers={"Accept": "text/html"}).status_code == 200
    revoke_token(store, "anna")
    assert client.get("/status", headers={"Accept": "text/html"}).status_code == 401


def test_metrics_stay_open_only_when_asked(served: Served) -> None:
    for public, expected in ((False, 401), (True, 200)):
        settings = ServeSettings(
            store=served.settings,
            require_token=True,
            public_metrics=public,
            allowed_hosts=("testserver",),
        )
        with TestClient(create_app(settings)) as client:
            assert client.get("/metrics").status_code == expected


def test_an_assistant_needs_a_read_token_too(served: Served, tmp_path: Path) -> None:
    shutil.copytree(served.settings.bucket, tmp_path / "bucket")
    store = LocalStore(tmp_path / "bucket")
    reader, _ = add_token(store, "agent", (Scope.READ,))
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path / "bucket")), port=0, mcp=True, require_token=True
    )

    async def tools(url: str, headers: dict[str, str]) -> set[str]:
        http = create_mcp_http_client(headers=headers)
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=60) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    with background_server(settings) as url:
        assert "search" in asyncio.run(tools(url, {"Authorization": f"Bearer {reader}"}))
        with pytest.raises(BaseException):  # noqa: B017 (the SDK wraps the 401 in a group)
            asyncio.run(tools(url, {}))


def test_a_server_reachable_beyond_this_machine_says_who_can_read_it() -> None:
    assert exposure(ServeSettings(host="127.0.0.1")) == []
    assert exposure(ServeSettings(host="127.0.0.1", require_token=True)) == []
    said = exposure(ServeSettings(host="10.1.2.3"))
    assert len(said) == 1 and "without --require-token" in said[0]
    assert not any("--require-token" in line for line in exposure(
        ServeSettings(host="0.0.0.0", require_token=True)
    ))  # fmt: skip


def test_tokens_are_made_with_their_scopes(tmp_path: Path, served: Served) -> None:
    shutil.copytree(served.settings.bucket, tmp_path / "bucket")
    bucket = str(tmp_path / "bucket")
    runner = CliRunner()
    made = runner.invoke(cli, ["tokens", "add", "anna", "--scope", "read", "--bucket", bucket])
    assert made.exit_code == 0, made.output
    assert "(read;" in made.output
    listed = runner.invoke(cli, ["tokens", "ls", "--bucket", bucket])
    assert " anna  read  " in listed.output
