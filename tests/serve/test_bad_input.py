"""Every front end (the command line, the HTTP API and web pages, the MCP tools) through wrong
buckets, damaged objects, unknown hashes, bad arguments and oversize input: each answers with a
one-line reason and its documented exit code or status, and no traceback reaches anyone."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client

from bucketdigest.cli.main import cli
from bucketdigest.serve.agents import build_agent_server
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import Backend, ServeSettings
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from tests.serve.conftest import TOKEN, Served

UNKNOWN = "0000000000ff"
LONG = "x" * 5000
READ_ONLY = ["check", "get", "index", "ls", "mcp", "monitor", "prioritize", "purge"]


def _cli(*args: str) -> tuple[int, str]:
    """Exit code and everything printed; an exception escaping the command fails the test
    (it would have reached the user as a traceback)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _one_line_error(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert "Traceback" not in output, output
    assert lines and lines[-1].startswith("Error: "), output
    return lines[-1]


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["ls"],
        ["search", "knights"],
        ["get", UNKNOWN, "-o", "out"],
        ["check"],
        ["index"],
        ["monitor", "--once"],
        ["retry", UNKNOWN],
        ["reprocess", UNKNOWN],
        ["prioritize", UNKNOWN, "--priority", "high"],
        ["rm", UNKNOWN],
        ["purge", "--dry-run"],
        ["work", "--exit-when-idle"],
    ],
)
def test_the_command_line_on_a_bucket_that_is_not_there(tmp_path: Path, command: list[str]) -> None:
    bucket = tmp_path / "typo"
    code, output = _cli(*command, "--bucket", str(bucket))
    assert code == 1, output
    assert _one_line_error(output).startswith(f"Error: no bucket at {bucket}")
    assert not bucket.exists(), "nothing is created"


@pytest.mark.parametrize(
    ("command", "code", "reason"),
    [
        (["get", UNKNOWN, "-o", "{tmp}/o"], 1, "no document's hash starts so"),
        (["get", "no/such/file.pdf", "-o", "{tmp}/o"], 1, "no registered file has this path"),
        (["retry", UNKNOWN], 2, "no document's hash is or starts so"),
        (["reprocess", UNKNOWN], 2, "no document's hash is or starts so"),
        (["reprocess", "--digester", "nope", "--all"], 2, "nope"),
        (["rm", UNKNOWN], 1, UNKNOWN),
        (["search", " "], 2, "the query is empty: say what to look for"),
        (["search", LONG], 2, "at most 1000"),
        (["search", "x", "--limit", "0"], 2, "--limit"),
        (["search", "x", "--mode", "magic"], 2, "--mode"),
        (["prioritize", UNKNOWN, "--priority", "urgent"], 2, "--priority"),
    ],
)
def test_the_command_line_names_what_is_wrong_with_an_argument(
    writable: StoreSettings, tmp_path: Path, command: list[str], code: int, reason: str
) -> None:
    args = [part.replace("{tmp}", str(tmp_path)) for part in command]
    got, output = _cli(*args, "--bucket", writable.bucket)
    assert got == code, output
    line = _one_line_error(output)
    assert reason in line, line
    assert len(line) < 400, "an oversize argument is not echoed whole"


def test_the_command_line_on_damaged_objects(writable: StoreSettings, served: Served) -> None:
    store = LocalStore(Path(writable.bucket))
    digest = served.digests["naval/broadsides.md"]
    store.put(keys.out_key(digest), b"PK\x03\x04 truncated")
    store.put(keys.queue_key(keys.QueueState.FAILED, served.digests["broken.pdf"]), b"{")
    code, output = _cli("get", digest[:12], "-o", "out", "--bucket", writable.bucket)
    assert code == 1 and "result damaged" in _one_line_error(output)
    for command in (["status"], ["status", "--json"], ["ls"], ["index"]):
        code, output = _cli(*command, "--bucket", writable.bucket)
        assert code == 0 and "Traceback" not in output, (command, output)
    code, output = _cli("status", "--json", "--bucket", writable.bucket)
    assert (
        keys.queue_key(keys.QueueState.FAILED, served.digests["broken.pdf"])
        in json.loads(output)["damaged"]
    )


HTTP_CASES = [
    ("GET", f"/api/documents/{UNKNOWN}", 404, "no document's hash starts so"),
    ("GET", "/api/documents/xyz", 404, "is not a document hash"),
    ("GET", f"/api/documents/{'a' * 3000}", 404, "is not a document hash"),
    ("GET", "/api/search/chunks?q=", 400, "the query is empty"),
    ("GET", f"/api/search/chunks?q={'x' * 1001}", 400, "at most 1000 characters"),
    ("GET", "/api/search/chunks?q=x&limit=0", 400, "limit"),
    ("GET", "/api/search/documents?q=x&mode=magic", 400, "mode"),
    ("GET", f"/api/search/chunks?q={'x' * 9000}", 414, "query string is over"),
    ("GET", "/api/documents/{long}/markdown?page=0", 400, "page"),
    ("GET", "/api/documents/{long}/markdown?page=999", 404, "has no page 999"),
    ("GET", f"/api/documents/{{long}}/files/{'n' * 500}.png", 404, "has no file"),
    ("GET", "/api/documents/{damaged}", 500, "result damaged"),
    ("GET", "/api/documents/{damaged}/zip", 500, "result damaged"),
    ("POST", "/api/documents/{long}/reprocess", 401, "token"),
    ("POST", "/api/documents/{long}/reprocess?digester=nope", 401, "token"),
    ("POST", "/api/documents/{long}/retry", 401, "token"),
    ("POST", f"/api/documents/{UNKNOWN}/retry", 404, "no document's hash starts so"),
]


@pytest.mark.parametrize(("method", "path", "status", "reason"), HTTP_CASES)
def test_the_http_api_answers_bad_requests_with_a_status_and_one_line(
    writable: StoreSettings,
    served: Served,
    method: str,
    path: str,
    status: int,
    reason: str,
) -> None:
    store = LocalStore(Path(writable.bucket))
    damaged = served.digests["naval/broadsides.md"]
    store.put(keys.out_key(damaged), b"PK\x03\x04 truncated")
    path = path.format(long=served.digests["rulebooks/long.pdf"], damaged=damaged)
    settings = ServeSettings(store=writable, token=TOKEN, allowed_hosts=("testserver",))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        answer = client.request(method, path)
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert reason in detail and "\n" not in detail and "Traceback" not in detail
    assert len(detail) < 400, "the request is not echoed whole"


def test_writes_with_the_token_name_what_is_wrong(writable: StoreSettings, served: Served) -> None:
    settings = ServeSettings(store=writable, token=TOKEN, allowed_hosts=("testserver",))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for path, status, reason in (
            (f"/api/documents/{UNKNOWN}/retry", 404, "no document's hash starts so"),
            (f"/api/documents/{UNKNOWN}/reprocess", 404, "no document's hash starts so"),
        ):
            answer = client.post(path, headers=auth)
            assert answer.status_code == status and reason in answer.json()["detail"]
        wrong = client.post(
            f"/api/documents/{served.digests['broken.pdf']}/retry",
            headers={"Authorization": "Bearer x"},
        )
        assert (
            wrong.status_code == 403
            and "this token is unknown, revoked or may not write" in wrong.json()["detail"]
        )


def test_a_web_page_for_a_bad_request_is_a_page_with_the_reason(client: TestClient) -> None:
    for path, status, reason in (
        (f"/documents/{UNKNOWN}", 404, "no document&#39;s hash starts so"),
        ("/?q=" + "x" * 1001, 400, "1000"),
    ):
        answer = client.get(path)
        assert answer.status_code == status and reason in answer.text
        assert answer.headers["content-type"].startswith("text/html")
        assert "Traceback" not in answer.text


def test_the_mcp_tools_answer_bad_calls_with_the_reason(
    writable: StoreSettings, served: Served
) -> None:
    store = LocalStore(Path(writable.bucket))
    damaged = served.digests["naval/broadsides.md"]
    store.put(keys.out_key(damaged), b"PK\x03\x04 truncated")
    backend = Backend(ServeSettings(store=writable))
    server = build_agent_server(backend)

    async def calls() -> None:
        async with Client(server) as agent:
            for name, arguments, reason in (
                ("get_document", {"document": UNKNOWN}, "no document's hash starts so"),
                ("get_document", {"document": "x" * 5000}, "at most 4096"),
                ("get_page", {"document": damaged, "page": 1}, "result damaged"),
                ("search", {"query": LONG}, "at most 1000"),
                ("search", {"query": "x", "limit": 0}, "limit must be ≥ 1"),
                ("list_documents", {"limit": 5000}, "limit must be ≤ 1000"),
                ("status", {"verbose": True}, "verbose is not an argument"),
            ):
                answer = await agent.call_tool(name, arguments)
                told = answer.content[0].text
                assert answer.is_error and reason in told, (name, told)
                assert "Traceback" not in told

    try:
        asyncio.run(calls())
    finally:
        backend.close()
