"""The web pages: what a person sees, escaped and sanitised, and errors as pages."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from bucketdigest.search.request import PER_DOCUMENT
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared.config import StoreSettings
from tests.serve.conftest import TOKEN, Served


def test_the_search_page_lists_hits_with_marked_words_and_links_to_the_page(
    client: TestClient, served: Served
) -> None:
    html = client.get("/", params={"q": "grapple an opponent"}).text
    digest = served.digests["melee/grappling.md"]
    assert f'href="/documents/{digest}?page=1#page-1"' in html
    assert re.search(r"<mark>grappl\w*</mark>", html, re.IGNORECASE)


def test_more_from_this_document_links_to_a_search_of_that_document(
    client: TestClient, served: Served
) -> None:
    """A keyword search shows a few of the long rulebook's passages, each under its title, and
    links to the rest (a hybrid one, which finds it far ahead of any other document, shows
    more of them at once: tests/serve/test_api.py)."""
    long_pdf = served.digests["rulebooks/long.pdf"]
    page = client.get("/", params={"q": "The Long Rulebook", "mode": "keyword"}).text
    assert page.count(f'href="/documents/{long_pdf}?page=') == PER_DOCUMENT
    links = re.findall(r'<a class="more" href="([^"]+)">more from this document', page)
    assert len(links) == 1 and f"document={long_pdf}" in links[0]
    more = client.get(html.unescape(links[0])).text
    assert "in one document" in more
    shown = set(re.findall(r'<h3><a href="/documents/([0-9a-f]{64})', more))
    assert shown == {long_pdf}
    assert more.count(f'href="/documents/{long_pdf}?page=') > PER_DOCUMENT


def test_the_document_level_search_links_to_documents(client: TestClient, served: Served) -> None:
    html = client.get("/", params={"q": "spells and wizards", "level": "documents"}).text
    assert f'href="/documents/{served.digests["magic/spells.md"]}"' in html


def test_a_query_is_never_reflected_as_markup(client: TestClient) -> None:
    html = client.get("/", params={"q": '"><script>alert(1)</script>'}).text
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;" in html


def test_hostile_document_text_renders_as_text(client: TestClient, served: Served) -> None:
    answer = client.get(f"/documents/{served.digests['hostile.pdf']}")
    assert answer.status_code == 200
    assert "Beware the dragon" in answer.text
    assert "<script>" not in answer.text
    assert "&lt;script&gt;" in answer.text
    assert "script-src" not in answer.headers["content-security-policy"]
    assert "default-src 'none'" in answer.headers["content-security-policy"]


def test_the_document_page_shows_thumbnail_tags_summary_pages_and_records(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    html = client.get(f"/documents/{digest}").text
    assert f'src="/api/documents/{digest}/thumbnail"' in html
    assert "rulebooks/long.pdf" in html
    assert "Summary" in html and "Digest records" in html
    assert 'id="page-1"' in html and 'id="page-20"' in html and 'id="page-21"' not in html
    assert f'src="/api/documents/{digest}/files/images/' in html
    later = client.get(f"/documents/{digest}", params={"page": 23}).text
    assert 'id="page-23"' in later and 'id="page-1"' not in later
    assert "pages 21\N{EN DASH}25 of 25" in later


def test_ocr_text_is_marked_as_such(client: TestClient, served: Served) -> None:
    html = client.get(f"/documents/{served.digests['scanned.pdf']}").text
    ocr = html[html.index('class="ocr"') :]
    assert "OCR text" in ocr and "Battle" in ocr


def test_a_failed_document_page_says_why(client: TestClient, served: Served) -> None:
    html = client.get(f"/documents/{served.digests['broken.pdf']}").text
    assert "failed" in html and "Failed:" in html
    assert "token" not in html  # no write buttons on a read-only server


def test_the_status_page_shows_counts_chart_failures_and_index(client: TestClient) -> None:
    html = client.get("/status").text
    assert "<svg" in html and html.count("<rect") == 60
    assert "broken.pdf" in html
    assert "8 documents" in html and "up to date" in html


def test_unknown_documents_get_a_404_page(client: TestClient) -> None:
    answer = client.get(f"/documents/{'ab' * 32}")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert "no such document" in answer.text


def test_retry_button_with_the_token_requeues(writer: TestClient, served: Served) -> None:
    digest = served.digests["broken.pdf"]
    page = writer.get(f"/documents/{digest}").text
    assert f'action="/documents/{digest}/retry"' in page
    wrong = writer.post(f"/documents/{digest}/retry", data={"token": "nope"})
    assert wrong.status_code == 403
    answer = writer.post(f"/documents/{digest}/retry", data={"token": TOKEN})
    assert answer.status_code == 200  # after the redirect
    assert "back in line" in answer.text


def test_a_bucket_that_cannot_be_reached_gives_a_503_page(tmp_path) -> None:
    down = StoreSettings(bucket="s3://nowhere/data", endpoint_url="http://127.0.0.1:9")
    with TestClient(create_app(ServeSettings(store=down, allowed_hosts=("testserver",)))) as client:
        page = client.get(f"/documents/{'ab' * 32}")
        assert page.status_code == 503
        assert "Bucket unavailable" in page.text and "Traceback" not in page.text
        assert client.get("/api/status").status_code == 503
        assert client.get("/api/healthz").status_code == 503


def test_no_index_yet_is_said_plainly(tmp_path) -> None:
    empty = StoreSettings(bucket=str(tmp_path / "empty"))
    with TestClient(
        create_app(ServeSettings(store=empty, allowed_hosts=("testserver",)))
    ) as client:
        answer = client.get("/", params={"q": "dragons"})
        assert answer.status_code == 503
        assert "bucketdigest index" in answer.text
        assert client.get("/status").status_code == 200


def test_a_table_with_spanned_cells_renders_as_a_table_and_nothing_else_does() -> None:
    from bucketdigest.serve.html import markdown_html

    page = (
        "Before.\n\n"
        '<table><tr><th colspan="2" onclick="steal()">Moisture</th></tr>'
        "<tr><td>27</td><td><script>x()</script>33</td></tr></table>\n\n"
        "<table><tr><td>not alone on its line</td></tr></table> after\n\n"
        '<img src="x" onerror="steal()">'
    )
    html = str(markdown_html(page, "/api/documents/h/files/"))
    assert '<tr><th colspan="2">Moisture</th></tr><tr><td>27</td><td>33</td></tr>' in html
    assert "onclick" not in html and "<script" not in html and "<img" not in html
    assert "&lt;table&gt;" in html, "HTML that is not a converter table is shown as text"


def test_a_one_page_document_says_one_page_and_a_finished_queue_nothing_left(
    client: TestClient, served: Served
) -> None:
    page = client.get(f"/documents/{served.digests['naval/broadsides.md']}").text
    assert "· 1 page" in page and "1 pages" not in page
    assert "time left at that rate: nothing left" in client.get("/status").text


def test_the_pages_have_an_icon(client: TestClient) -> None:
    page = client.get("/").text
    assert '<link rel="icon" href="/favicon.svg"' in page
    for path in ("/favicon.svg", "/favicon.ico"):
        icon = client.get(path)
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.content.startswith(b"<svg")
