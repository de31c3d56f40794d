"""serve on a network: only hosts it answers to, HEAD where GET is, bounded requests, no local
paths to anonymous clients, clear errors for damaged results, real tokens, the API page
offline."""

from __future__ import annotations

import io
import os
import socket
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.serve.guards import RequestGuard
from bucketdigest.serve.privacy import public_source
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.stores.local import LocalStore
from tests.serve.conftest import TOKEN, Served


def test_a_request_naming_another_host_is_refused_and_never_reflected(served: Served) -> None:
    with TestClient(create_app(ServeSettings(store=served.settings))) as client:
        rebound = client.get("/status/", headers={"Host": "evil.example"}, follow_redirects=False)
        assert rebound.status_code == 400 and "evil.example" not in rebound.headers.get(
            "location", ""
        )
        for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
            assert client.get("/api/healthz", headers={"Host": host}).status_code == 200, host


def test_hosts_a_server_bound_everywhere_answers_to() -> None:
    guard = RequestGuard(app=None, bound="0.0.0.0", allowed=["docs.example.org"])  # type: ignore[arg-type]
    assert guard.accepts("192.168.1.20:8000") and guard.accepts("docs.example.org")
    assert not guard.accepts("evil.example") and not guard.accepts("evil.example:8000")
    local = RequestGuard(app=None, bound="127.0.0.1")  # type: ignore[arg-type]
    assert not local.accepts("192.168.1.20") and local.accepts("localhost:8000")


def test_head_answers_on_every_get_route(client: TestClient, served: Served) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    for path in ("/", "/status", f"/documents/{digest}", "/api/status", "/api/healthz"):
        answer = client.head(path)
        assert answer.status_code == 200, path
        assert answer.content == b""


def test_a_huge_query_string_is_414_and_a_bad_hash_is_not_echoed_whole(client: TestClient) -> None:
    assert client.get("/api/search/chunks?q=" + "x" * 60_000).status_code == 414
    answer = client.get("/api/documents/" + "z" * 5000)
    assert answer.status_code == 404 and len(answer.text) < 300


def test_anonymous_answers_hold_no_local_paths(client: TestClient, served: Served) -> None:
    bucket = str(served.settings.bucket)
    assert bucket not in client.get("/api/healthz").text
    missing = client.get("/api/documents/" + "ab" * 32)
    assert missing.status_code == 404 and bucket not in missing.text


def test_retrying_an_unknown_document_is_404(writer: TestClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert writer.post("/api/documents/" + "cd" * 32 + "/retry", headers=auth).status_code == 404


def test_a_damaged_result_and_a_non_latin_member_name_get_clear_answers(
    writable: StoreSettings, served: Served
) -> None:
    store = LocalStore(Path(writable.bucket))
    digest = served.digests["rulebooks/long.pdf"]
    store.put(keys.out_key(digest), b"PK\x03\x04 not a zip at all")
    with TestClient(
        create_app(ServeSettings(store=writable, token=TOKEN, allowed_hosts=("testserver",))),
        raise_server_exceptions=False,
    ) as client:
        page = client.get(f"/documents/{digest[:10].upper()}")
        assert page.status_code == 200 and "Result damaged: reprocess it." in page.text
        assert f"/api/documents/{digest}/zip" not in page.text, "no link to the broken bytes"
        assert f'action="/documents/{digest}/reprocess"' in page.text
        for route in ("", "/summary", "/markdown", "/markdown?page=2", "/zip", "/thumbnail"):
            answer = client.get(f"/api/documents/{digest}{route}")
            assert answer.status_code == 500, route
            assert answer.headers["content-type"] == "application/json", route
            assert answer.headers["x-content-type-options"] == "nosniff"
            reason = answer.json()["detail"]
            assert reason.startswith(f"{digest}: result damaged (") and "reprocess" in reason
        auth = {"Authorization": f"Bearer {TOKEN}"}
        redone = client.post(f"/api/documents/{digest[:12]}/reprocess", headers=auth)
        assert redone.status_code == 200 and redone.json()["digesters"][0] == "doc-to-markdown"
        assert store.head(keys.work_request_key(digest)) is not None
        assert store.head(keys.queue_key(keys.QueueState.TODO, digest)) is not None
        named = served.digests["naval/broadsides.md"]
        buffer = io.BytesIO()
        original = io.BytesIO(store.get(keys.out_key(named)).data)
        with zipfile.ZipFile(original) as source, zipfile.ZipFile(buffer, "w") as copy:
            for name in source.namelist():
                copy.writestr(name, source.read(name))
            copy.writestr("images/карта.txt", b"map")
        store.put(keys.out_key(named), buffer.getvalue())
        answer = client.get(f"/api/documents/{named}/files/images/карта.txt")
        assert answer.status_code == 200 and answer.content == b"map"
        assert (
            "filename*=UTF-8''%D0%BA%D0%B0%D1%80%D1%82%D0%B0.txt"
            in answer.headers["content-disposition"]
        )


def test_a_token_of_spaces_is_refused(served: Served) -> None:
    with pytest.raises(ConfigError, match="16 characters"):
        ServeSettings(store=served.settings, token=" " * 16)


def test_the_api_page_loads_its_scripts_from_the_server(client: TestClient) -> None:
    page = client.get("/docs").text
    assert "cdn" not in page.lower() and "/static/swagger/swagger-ui-bundle.js" in page
    assert client.get("/static/swagger/swagger-ui-bundle.js").status_code == 200


def test_a_real_server_answers_a_megabyte_query_string_414(served: Served) -> None:
    import socket

    from bucketdigest.serve.app import background_server

    with background_server(ServeSettings(store=served.settings, port=0)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            line = f"GET /api/search/chunks?q={'x' * 1_000_000} HTTP/1.1\r\n"
            connection.sendall(f"{line}Host: {host}\r\nConnection: close\r\n\r\n".encode())
            assert connection.recv(100).startswith(b"HTTP/1.1 414")


def _anonymous_answers(client: TestClient, served: Served) -> dict[str, str]:
    long_pdf = served.digests["rulebooks/long.pdf"]
    broken = served.digests["broken.pdf"]
    paths = [
        "/api/search/chunks?q=dragon&limit=50",
        "/api/search/documents?q=dragon&limit=50",
        f"/api/documents/{long_pdf}",
        f"/api/documents/{broken}",
        "/api/status",
        f"/documents/{long_pdf}",
        f"/documents/{broken}",
        "/status",
        "/?q=dragon",
    ]
    return {path: client.get(path).text for path in paths}


def test_search_hits_documents_and_status_hide_source_folders_and_workers(
    client: TestClient, served: Served
) -> None:
    folder = str(Path(served.settings.bucket).parent / "in")
    machine = f"{socket.gethostname()}-{os.getpid()}-"  # how worker ids begin
    for path, text in _anonymous_answers(client, served).items():
        assert folder not in text, path
        assert machine not in text, path
    hits = client.get("/api/search/chunks", params={"q": "dragon"}).json()["hits"]
    assert hits and all(s == "…/in" for h in hits for s in h["sources"])
    # the source filter still narrows by the real folder, which the client may know
    narrowed = client.get("/api/search/chunks", params={"q": "dragon", "source": folder})
    assert narrowed.json()["hits"]


def test_show_locations_tells_every_client_where_documents_came_from(served: Served) -> None:
    settings = ServeSettings(
        store=served.settings, allowed_hosts=("testserver",), show_locations=True
    )
    with TestClient(create_app(settings)) as client:
        hits = client.get("/api/search/chunks", params={"q": "dragon"}).json()["hits"]
        folder = str(Path(served.settings.bucket).parent / "in")
        assert hits and all(s == folder for h in hits for s in h["sources"])


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("/home/ana/library/rulebooks/", "…/rulebooks"),
        ("file:///srv/pdfs", "…/pdfs"),
        ("C:\\Users\\ana\\pdfs", "…/pdfs"),
        (
            "https://user:secret@docs.example.org:8443/manual/",
            "https://docs.example.org:8443/manual/",
        ),
    ],
)
def test_a_source_is_shown_by_its_last_name_unless_it_is_a_web_address(
    source: str, shown: str
) -> None:
    assert public_source(source) == shown


def test_the_assistant_endpoint_refuses_other_origins_and_offers_no_stream(served: Served) -> None:
    settings = ServeSettings(store=served.settings, mcp=True, cors_origins=("https://app.example",))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        listed = client.post("/mcp", json=call, headers=accept)
        assert listed.status_code == 200 and "search" in listed.text
        for origin in ("http://127.0.0.1:8000", "https://app.example"):
            allowed = client.post("/mcp", json=call, headers={**accept, "Origin": origin})
            assert allowed.status_code == 200, origin
        foreign = client.post(
            "/mcp", json=call, headers={**accept, "Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403 and "evil.example" in foreign.json()["detail"]
        form = client.post(
            f"/documents/{'ab' * 32}/retry", data={"token": "x"}, headers={"Origin": "null"}
        )
        assert form.status_code == 403, "a page elsewhere cannot post the forms"
        stream = client.get("/mcp", headers={"Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"
