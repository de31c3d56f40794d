"""The JSON API on a bucket filled by real workers."""

from __future__ import annotations

import io
import json
import re
import sys
import threading
import traceback
import zipfile
from pathlib import Path

import PIL.Image
import pytest
from fastapi.testclient import TestClient

from bucketdigest.search.hit import Hit
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.request import PER_DOCUMENT, Mode, SearchRequest
from bucketdigest.serve import backend as backend_module
from bucketdigest.serve.backend import Backend, ServeSettings
from bucketdigest.serve.results import CacheSettings
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.stores.local import LocalStore
from tests.serve.conftest import HOSTILE, TOKEN, Served
from tests.waiting import wait_until


def test_chunk_search_finds_the_passage_with_its_page_and_marked_words(
    client: TestClient, served: Served
) -> None:
    answer = client.get("/api/search/chunks", params={"q": "boarding the enemy ship", "limit": 3})
    assert answer.status_code == 200
    best = answer.json()["hits"][0]
    assert best["digest"] == served.digests["naval/broadsides.md"]
    assert best["names"] == ["naval/broadsides.md"]
    start, end = best["highlights"][0]
    assert best["snippet"][start:end].lower() in {"boarding", "ship", "enemy"}


def test_document_search_ranks_the_document_about_the_topic_first(
    client: TestClient, served: Served
) -> None:
    answer = client.get(
        "/api/search/documents", params={"q": "crops and farming villages", "mode": "semantic"}
    )
    assert answer.json()["hits"][0]["digest"] == served.digests["world/harvest.md"]


def test_search_filters_by_file_type(client: TestClient, served: Served) -> None:
    hits = client.get("/api/search/chunks", params={"q": "dragon", "type": "pdf"}).json()["hits"]
    assert hits and {h["file_type"] for h in hits} == {"pdf"}
    hits = client.get("/api/search/chunks", params={"q": "dragon", "type": "md"}).json()["hits"]
    assert all(h["digest"] != served.digests["hostile.pdf"] for h in hits)


def test_empty_oversized_or_malformed_queries_are_400(client: TestClient) -> None:
    for params in ({"q": "   "}, {"q": "x" * 1001}, {"q": "dragon", "limit": 0}, {}):
        answer = client.get("/api/search/chunks", params=params)
        assert answer.status_code == 400, params
        assert answer.json()["detail"]
    assert client.get("/api/search/chunks", params={"q": "x", "mode": "magic"}).status_code == 400


def test_a_document_shows_its_state_sources_and_every_output(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    body = client.get(f"/api/documents/{digest}").json()
    assert body["state"] == "done"
    assert body["title"] == "long.pdf" and body["own_title"] == "The Long Rulebook"
    assert body["pages"] == 25
    assert [s["path"] for s in body["sources"]] == ["rulebooks/long.pdf"]
    statuses = {o["output"]: o["status"] for o in body["outputs"]}
    assert statuses["markdown"] == "completed" and statuses["ocr"] == "completed"
    assert body["tags"] and body["summary"]


def test_a_document_is_found_by_the_start_of_its_hash_in_either_case(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    body = client.get(f"/api/documents/{digest[:10].upper()}").json()
    assert body["digest"] == digest and body["title"] == "long.pdf"
    assert client.get(f"/api/documents/{digest[:12]}/markdown").status_code == 200
    unknown = client.get("/api/documents/00000000ffff")
    assert unknown.status_code == 404
    assert "no document's hash starts so" in unknown.json()["detail"]
    assert client.get("/api/documents/abc").status_code == 404


def test_info_json_reaches_anonymous_clients_without_worker_ids(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/documents/{digest}/zip").content))
    assert b"worker_id" in archive.read("info.json"), "the result itself names its worker"
    info = client.get(f"/api/documents/{digest}/files/info.json")
    assert info.status_code == 200
    assert "worker_id" not in info.text and info.json()["pages"] == 25


def test_a_failed_document_shows_its_error(client: TestClient, served: Served) -> None:
    body = client.get(f"/api/documents/{served.digests['broken.pdf']}").json()
    assert body["state"] == "failed"
    assert body["error"]


def test_summary_markdown_pages_thumbnail_files_and_zip(client: TestClient, served: Served) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    base = f"/api/documents/{digest}"
    assert client.get(f"{base}/summary").json()["summary"]
    whole = client.get(f"{base}/markdown")
    assert whole.headers["content-type"].startswith("text/markdown")
    page = client.get(f"{base}/markdown", params={"page": 3}).text
    assert page and page in whole.text
    assert client.get(f"{base}/markdown", params={"page": 26}).status_code == 404
    thumbnail = client.get(f"{base}/thumbnail")
    assert thumbnail.headers["content-type"] == "image/png"
    assert thumbnail.content.startswith(b"\x89PNG")
    info = client.get(f"{base}/files/info.json")
    assert info.headers["content-disposition"].startswith("attachment")
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"{base}/zip").content))
    assert "document.md" in archive.namelist()


def test_image_links_in_served_markdown_resolve_over_http(
    client: TestClient, served: Served
) -> None:
    base = f"/api/documents/{served.digests['rulebooks/long.pdf']}"
    for params in ({}, {"page": 1}):
        markdown = client.get(f"{base}/markdown", params=params).text
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
        assert links, markdown[:500]
        for link in links:
            image = client.get(link)
            assert image.status_code == 200, link
            assert image.headers["content-type"] == "image/png"


def test_ocr_text_of_a_scanned_page_is_served_with_the_page(
    client: TestClient, served: Served
) -> None:
    page = client.get(
        f"/api/documents/{served.digests['scanned.pdf']}/markdown", params={"page": 1}
    ).text
    assert "Battle" in page


def test_unknown_and_malformed_hashes_and_members_are_404(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["hostile.pdf"]
    for path in (
        f"/api/documents/{'ab' * 32}",
        "/api/documents/not-a-hash",
        "/api/documents/..%2F..%2Fetc%2Fpasswd",
        f"/api/documents/{digest}/files/../../../etc/passwd",
        f"/api/documents/{digest}/files/%2e%2e/%2e%2e/etc/passwd",
        f"/api/documents/{digest}/files/pages%2F..%2Finfo.json",
        f"/api/documents/{digest}/files/",
        f"/api/documents/{served.digests['broken.pdf']}/thumbnail",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "Traceback" not in answer.text


def test_writes_are_off_by_default(client: TestClient, served: Served) -> None:
    answer = client.post(
        f"/api/documents/{served.digests['broken.pdf']}/retry",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert answer.status_code == 403
    assert "--allow-writes" in answer.json()["detail"]


def test_writes_need_the_token(writer: TestClient, served: Served) -> None:
    path = f"/api/documents/{served.digests['broken.pdf']}/retry"
    missing = writer.post(path)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert writer.post(path, headers={"Authorization": "Bearer wrong"}).status_code == 403


def test_retry_puts_a_failed_document_back_in_line(
    writer: TestClient, writable: StoreSettings, served: Served
) -> None:
    digest = served.digests["broken.pdf"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert writer.post(f"/api/documents/{digest}/retry", headers=auth).json()["requeued"]
    store = LocalStore(Path(writable.bucket))
    assert store.head(keys.queue_key(QueueState.TODO, digest)) is not None
    assert store.head(keys.queue_key(QueueState.FAILED, digest)) is None


def test_reprocess_queues_a_done_document_for_the_digester_and_its_cascade(
    writer: TestClient, writable: StoreSettings, served: Served
) -> None:
    digest = served.digests["magic/spells.md"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    answer = writer.post(
        f"/api/documents/{digest}/reprocess", params={"digester": "tags"}, headers=auth
    )
    assert answer.status_code == 200
    assert answer.json()["digesters"][0] == "tags"
    assert (
        LocalStore(Path(writable.bucket)).head(keys.queue_key(QueueState.TODO, digest)) is not None
    )
    unknown = writer.post(
        f"/api/documents/{digest}/reprocess", params={"digester": "nope"}, headers=auth
    )
    assert unknown.status_code == 400
    failed = served.digests["broken.pdf"]
    assert writer.post(f"/api/documents/{failed}/reprocess", headers=auth).status_code == 409


def test_status_counts_throughput_failures_and_index_freshness(client: TestClient) -> None:
    status = client.get("/api/status").json()
    assert status["counts"] == {"todo": 0, "processing": 0, "failed": 1, "done": 8}
    assert sum(status["done_per_minute"]) == 8
    assert len(status["done_per_minute"]) == 60
    assert status["eta_seconds"] == 0
    assert status["failures"][0]["name"] == "broken.pdf"
    assert status["runs"][0]["discovered"] == 9
    assert status["index"]["documents"] == 8 and status["index"]["behind"] == 0
    assert client.get("/api/healthz").json()["ok"] is True


def test_every_api_route_is_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/api/search/chunks",
        "/api/search/documents",
        "/api/documents/{digest}",
        "/api/documents/{digest}/summary",
        "/api/documents/{digest}/markdown",
        "/api/documents/{digest}/thumbnail",
        "/api/documents/{digest}/files/{member}",
        "/api/documents/{digest}/retry",
        "/api/documents/{digest}/reprocess",
        "/api/status",
        "/api/healthz",
    } <= set(paths)
    assert not any(path.startswith("/documents") for path in paths)


def test_no_cors_unless_asked(client: TestClient) -> None:
    answer = client.get("/api/status", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in answer.headers


def test_hostile_text_is_served_verbatim_as_markdown(client: TestClient, served: Served) -> None:
    page = client.get(
        f"/api/documents/{served.digests['hostile.pdf']}/markdown", params={"page": 1}
    )
    assert "Beware the dragon" in page.text
    assert page.headers["x-content-type-options"] == "nosniff"
    assert HOSTILE.split()[0] in page.text


def test_the_server_keeps_its_searcher_until_the_index_changes(writable: StoreSettings) -> None:
    """A searcher opened anew starts with cold caches: the server looks for a new index
    version every ``refresh_seconds`` but keeps the searcher it has when there is none."""
    backend = Backend(ServeSettings(store=writable, refresh_seconds=0.0))
    first = backend.searcher()
    assert backend.searcher() is first
    store = LocalStore(Path(writable.bucket))
    digest = next(keys.parse_out_key(i.key) for i in store.list(keys.OUT_PREFIX))
    store.delete(keys.out_key(digest))
    assert index_bucket(store, writable).removed == 1
    assert backend.searcher() is not first
    assert not any(h.digest == digest for h in backend.search(SearchRequest("the", limit=50)))


def test_a_search_asked_again_is_answered_from_what_the_server_kept_until_something_changes(
    writable: StoreSettings, served: Served
) -> None:
    """The same request (spelt with other spaces too) while the index has no new version is
    answered with the hits shown before, without searching again; a changed result the hits
    point into, or a new index version, makes the server search again."""
    settings = ServeSettings(
        store=writable, refresh_seconds=0.0, cache=CacheSettings(revalidate_seconds=0.0)
    )
    backend = Backend(settings)
    searcher = backend.searcher()
    asked: list[SearchRequest] = []
    search = searcher.search
    searcher.search = lambda request: asked.append(request) or search(request)  # type: ignore[method-assign]
    first = backend.search(SearchRequest("  The Long\tRulebook "))
    long_pdf = served.digests["rulebooks/long.pdf"]
    assert any(h.digest == long_pdf and h.regions for h in first)
    assert backend.search(SearchRequest("The Long Rulebook")) == first
    assert len(asked) == 1

    store = LocalStore(Path(writable.bucket))
    result = store.get(keys.out_key(long_pdf)).data
    store.put(keys.out_key(long_pdf), result)  # the same bytes anew: another version
    assert backend.search(SearchRequest("The Long Rulebook")) == first
    assert len(asked) == 2

    store.delete(keys.out_key(long_pdf))
    assert index_bucket(store, writable).removed == 1
    assert not any(h.digest == long_pdf for h in backend.search(SearchRequest("The Long Rulebook")))


def test_the_answers_kept_are_bounded_by_their_hits(
    writable: StoreSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests for many hits each cannot fill a server's memory: what it keeps is counted
    in hits, the least recently asked answer dropped first, one larger than the whole bound
    never kept."""
    monkeypatch.setattr(backend_module, "HITS_KEPT", 15)
    backend = Backend(ServeSettings(store=writable))
    searcher = backend.searcher()
    asked: list[str] = []
    search = searcher.search
    searcher.search = lambda request: asked.append(request.query) or search(request)  # type: ignore[method-assign]

    def ask(query: str, limit: int = 10) -> int:
        request = SearchRequest(query, mode=Mode.KEYWORD, limit=limit, per_document=0)
        return len(backend.search(request))

    assert [ask("dice"), ask("player"), ask("dice")] == [10, 10, 10]
    assert asked == ["dice", "player", "dice"]  # ten and ten hits: the first was dropped
    ask("player")
    assert asked == ["dice", "player", "dice", "player"]
    ask("player")
    assert len(asked) == 4  # the last ten kept
    assert ask("dice", limit=20) > 15 and ask("dice", limit=20) > 15
    assert asked[-2:] == ["dice", "dice"]


def _started(threads: list[threading.Thread]) -> list[threading.Thread]:
    for thread in threads:
        thread.start()
    return threads


def _waiting_in(threads: list[threading.Thread], function: str) -> int:
    """How many of ``threads`` are inside a call of ``function`` (waiting on it) now."""
    frames = sys._current_frames()
    stacks = [traceback.extract_stack(frames[t.ident]) for t in threads if t.ident in frames]
    return sum(any(frame.name == function for frame in stack) for stack in stacks)


def test_the_same_search_asked_at_once_by_many_is_answered_once(
    writable: StoreSettings,
) -> None:
    """Clients asking the same new question at the same moment (a page shared in a chat)
    wait for the one search under way instead of each running it again."""
    backend = Backend(ServeSettings(store=writable))
    searcher = backend.searcher()
    asked: list[SearchRequest] = []
    go_on = threading.Event()
    search = searcher.search

    def slow_search(request: SearchRequest) -> list[Hit]:
        asked.append(request)
        assert go_on.wait(60)
        return search(request)

    searcher.search = slow_search  # type: ignore[method-assign]
    answers: dict[int, list[Hit]] = {}

    def ask(n: int) -> None:
        answers[n] = backend.search(SearchRequest("thieves tools"))

    threads = _started([threading.Thread(target=ask, args=(n,)) for n in range(4)])

    def waiting_for_the_answer() -> bool:
        return len(asked) == 1 and _waiting_in(threads, "result") == len(threads) - 1

    wait_until(waiting_for_the_answer, "three requests never waited for the first")
    go_on.set()
    for thread in threads:
        thread.join(60)
    assert len(asked) == 1
    assert answers[0] and all(answers[n] == answers[0] for n in range(4))


def test_a_server_process_works_on_a_few_searches_at_once_and_a_kept_answer_waits_for_none(
    writable: StoreSettings,
) -> None:
    """Searches are CPU work: many clients at once get their answers in turn, at most
    SEARCHES_AT_ONCE worked on together, instead of every search running slower; a search
    asked before is answered from what was kept while the others wait."""
    backend = Backend(ServeSettings(store=writable))
    searcher = backend.searcher()
    kept = backend.search(SearchRequest("dice"))
    working: list[str] = []
    go_on = threading.Event()
    search = searcher.search

    def slow_search(request: SearchRequest) -> list[Hit]:
        working.append(request.query)
        assert go_on.wait(60)
        return search(request)

    searcher.search = slow_search  # type: ignore[method-assign]
    queries = ["thieves tools", "grappling", "naval combat", "spell slots", "initiative"]
    answers: dict[str, list[Hit]] = {}

    def ask(query: str) -> None:
        answers[query] = backend.search(SearchRequest(query))

    threads = _started([threading.Thread(target=ask, args=(q,)) for q in queries])

    def the_rest_wait_their_turn() -> bool:
        at_once = backend_module.SEARCHES_AT_ONCE
        return len(working) == at_once and _waiting_in(threads, "acquire") == len(queries) - at_once

    wait_until(the_rest_wait_their_turn, "searches were not taken a few at a time")
    assert backend.search(SearchRequest("dice")) == kept  # no turn to wait for
    go_on.set()
    for thread in threads:
        thread.join(60)
    assert sorted(working) == sorted(queries)
    alone = Backend(ServeSettings(store=writable))
    assert answers == {q: alone.search(SearchRequest(q)) for q in queries}
    assert all(answers.values())


def test_a_pdf_hit_carries_its_regions_and_its_page_view_highlights_them(
    client: TestClient, served: Served
) -> None:
    long_pdf = served.digests["rulebooks/long.pdf"]
    hits = client.get("/api/search/chunks", params={"q": "The Long Rulebook", "limit": 20}).json()
    hit = next(h for h in hits["hits"] if h["digest"] == long_pdf)
    assert hit["regions"] and all(r["page"] == hit["page"] for r in hit["regions"])
    assert all(r["x0"] < r["x1"] and r["y0"] < r["y1"] for r in hit["regions"])
    image = client.get(f"/api/documents/{long_pdf}/pages/{hit['page']}/image")
    assert image.status_code == 200 and image.headers["content-type"] in ("image/png", "image/jpeg")
    shown = PIL.Image.open(io.BytesIO(image.content))
    assert image.headers["content-type"] == f"image/{shown.format.lower()}"
    assert max(shown.size) == 1000
    sized = client.get(f"/api/documents/{long_pdf}/pages/{hit['page']}/image?size=400")
    assert max(PIL.Image.open(io.BytesIO(sized.content)).size) == 400
    tiny = client.get(f"/api/documents/{long_pdf}/pages/{hit['page']}/image?size=5")
    assert tiny.status_code == 400 and "size must be ≥ 100" in tiny.json()["detail"]
    assert client.get(f"/api/documents/{long_pdf}/pages/99/image").status_code == 404
    view = client.get(hit["view"])
    assert view.status_code == 200
    rects = re.findall(r'<rect class="highlight"[^>]*data-x0="([\d.]+)"', view.text)
    assert [float(x) for x in rects] == [r["x0"] for r in hit["regions"]]
    assert f"/api/documents/{long_pdf}/pages/{hit['page']}/image" in view.text
    # a hit on a document without pages has no regions and no view to highlight
    notes = client.get("/api/search/chunks", params={"q": "boarding the enemy ship"}).json()
    assert notes["hits"][0]["regions"] == []


def test_a_scanned_pages_blocks_stand_where_the_ocr_read_them(served: Served) -> None:
    digest = served.digests["scanned.pdf"]
    archive = Path(served.settings.bucket) / "store" / "out" / f"{digest}.zip"
    with zipfile.ZipFile(archive) as opened:
        structure = json.loads(opened.read("document.json"))
    assert structure["pages"][0]["words"] == "ocr"
    heading = next(b for b in structure["blocks"] if "Rules of Battle" in b["text"])
    (region,) = heading["regions"]
    # drawn at x 72, baseline y 100, 28 pt: the OCR's box, scaled to points, is there
    assert 60 < region["x0"] < 80 and 65 < region["y0"] < 85 and 95 < region["y1"] < 115
    body = [b for b in structure["blocks"] if b["regions"] and b is not heading]
    assert body and all(
        r["x0"] > 60 and r["x1"] < 540 and r["y0"] > 130 and r["y1"] < 720
        for b in body
        for r in b["regions"]
    ), "the body stands in its text box (72, 140)-(520, 700)"


def test_the_command_lines_json_hits_carry_their_regions_too(served: Served) -> None:
    from click.testing import CliRunner

    from bucketdigest.cli.main import cli

    bucket = served.settings.bucket
    answer = CliRunner().invoke(
        cli, ["search", "The Long Rulebook", "--bucket", bucket, "--json", "--limit", "20"]
    )
    assert answer.exit_code == 0, answer.output
    hits = json.loads(answer.output)
    on_pdf = next(h for h in hits if h["digest"] == served.digests["rulebooks/long.pdf"])
    assert on_pdf["regions"] and f"chunk={on_pdf['chunk_id']}&blocks=" in on_pdf["view"]
    assert on_pdf["answer_blocks"] and len(on_pdf["chunk_regions"]) >= len(on_pdf["regions"])


def test_a_document_shows_a_few_passages_and_a_link_to_the_rest(
    client: TestClient, served: Served
) -> None:
    """Every chunk of the long rulebook stands under its title: a keyword search shows its best
    few and then other documents; the link on its last one answers with that document only.
    A hybrid search, where the rulebook leads every other document by far, shows its passages
    past the cap, as many as rank above every other document's."""
    long_pdf = served.digests["rulebooks/long.pdf"]
    hybrid = {"q": "The Long Rulebook", "limit": 20}
    led = client.get("/api/search/chunks", params=hybrid).json()["hits"]
    assert [h["digest"] for h in led[: PER_DOCUMENT + 1]] == [long_pdf] * (PER_DOCUMENT + 1)
    params = {**hybrid, "mode": "keyword"}
    hits = client.get("/api/search/chunks", params=params).json()["hits"]
    mine = [h for h in hits if h["digest"] == long_pdf]
    assert len(mine) == PER_DOCUMENT
    assert mine[-1]["more"] > 0 and all(h["more_from_document"] is None for h in mine[:-1])
    more = client.get(mine[-1]["more_from_document"]).json()["hits"]
    assert {h["digest"] for h in more} == {long_pdf}
    assert len(more) > PER_DOCUMENT
    everything = client.get("/api/search/chunks", params={**params, "per_document": 0}).json()
    assert [h["digest"] for h in everything["hits"]].count(long_pdf) > PER_DOCUMENT


def test_every_answer_carries_the_security_headers_of_its_page(client: TestClient) -> None:
    """Searches, pages, the upload page, the API page and errors each carry the headers that
    keep a browser from sniffing, leaking the address or running what it should not."""
    policies = {}
    for path in ("/api/search/chunks?q=dragon", "/", "/upload", "/docs", "/api/no-such-route"):
        answer = client.get(path)
        assert answer.headers["x-content-type-options"] == "nosniff", path
        assert answer.headers["referrer-policy"] == "no-referrer", path
        assert answer.headers.get_list("content-security-policy") == [
            answer.headers["content-security-policy"]
        ], path  # one policy, not the app's and ours
        policies[path] = answer.headers["content-security-policy"]
    assert client.get("/api/search/chunks?q=dragon").json()["hits"]
    assert (
        "script-src" not in policies["/"]
        and "script-src" not in policies["/api/search/chunks?q=dragon"]
    )
    assert "script-src 'self';" in policies["/upload"]
    assert "'unsafe-inline'" in policies["/docs"].split("script-src")[1].split(";")[0]
