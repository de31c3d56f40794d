"""A document is called by the name a person gave it (its file name) everywhere: the web
page, the API, the MCP tools and the loaders; its own title only when it says something."""

from __future__ import annotations

import asyncio
import html
import json
from typing import Any

from fastapi.testclient import TestClient
from mcp import Client

from bucketdigest import Bucket
from bucketdigest.serve.agents import build_agent_server
from bucketdigest.serve.backend import Backend, ServeSettings
from bucketdigest.shared.naming import display_name, own_title
from tests.serve.conftest import PLACEHOLDER_TITLE, Served


def _data(result: Any) -> Any:
    """A tool's answer as data (its structured content, else its JSON text)."""
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def _mcp_titles(served: Served, digest: str) -> tuple[set[str], dict[str, Any]]:
    """The titles MCP's ``search`` gives ``digest``'s hits, and its ``get_document``."""
    backend = Backend(ServeSettings(store=served.settings))

    async def ask() -> tuple[set[str], dict[str, Any]]:
        async with Client(build_agent_server(backend)) as agent:
            hits = _data(await agent.call_tool("search", {"query": "dragon's hoard", "limit": 20}))
            about = _data(await agent.call_tool("get_document", {"document": digest}))
            return {h["title"] for h in hits if h["digest"] == digest}, about

    try:
        return asyncio.run(ask())
    finally:
        backend.close()


def test_a_placeholder_title_gives_way_to_the_file_name_everywhere(
    client: TestClient, served: Served
) -> None:
    digest = served.digests["hostile.pdf"]
    api = client.get(f"/api/documents/{digest}").json()
    assert api["info"]["metadata"]["title"] == PLACEHOLDER_TITLE, "the placeholder is there"
    assert api["title"] == "hostile.pdf" and api["own_title"] is None
    hits = client.get("/api/search/chunks", params={"q": "dragon's hoard"}).json()["hits"]
    assert {h["title"] for h in hits if h["digest"] == digest} == {"hostile.pdf"}
    page = client.get(f"/documents/{digest}").text
    assert "<h1>hostile.pdf</h1>" in page and "hoard_v2" not in page
    found = client.get("/", params={"q": "dragon's hoard"}).text
    assert "hostile.pdf</a>" in found and "hoard_v2" not in html.unescape(found)

    searched, about = _mcp_titles(served, digest)
    assert searched == {"hostile.pdf"}
    assert about["title"] == "hostile.pdf" and about["cite"] == "hostile.pdf"

    from bucketdigest.loaders.langchain import BucketdigestLoader, BucketdigestRetriever

    loaded = BucketdigestLoader(served.settings.bucket).load()
    assert {d.metadata["title"] for d in loaded if d.metadata["hash"] == digest} == {"hostile.pdf"}
    retrieved = BucketdigestRetriever(bucket=Bucket(served.settings.bucket), k=20).invoke(
        "dragon's hoard"
    )
    assert {d.metadata["title"] for d in retrieved if d.metadata["hash"] == digest} == {
        "hostile.pdf"
    }


def test_a_meaningful_title_is_shown_as_the_files_own(client: TestClient, served: Served) -> None:
    digest = served.digests["rulebooks/long.pdf"]
    page = client.get(f"/documents/{digest}").text
    assert "<h1>long.pdf</h1>" in page and "Title in the file: The Long Rulebook" in page


def test_what_counts_as_a_placeholder() -> None:
    for placeholder in (
        "",
        "  ",
        "Untitled",
        "untitled document",
        "Microsoft Word - Q3 draft.doc",
        "Microsoft PowerPoint - deck",
        "report_final.pdf",
        "3f2a9c0d-1b7e-4c1a-9f0e-2d4b6a8c0e1f",
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
        "12345",
        "earnings",
    ):
        assert own_title({"title": placeholder}, ["reports/earnings.pdf"]) is None, placeholder
    for title in ("The Long Rulebook", "Annual Report 2024", "Über Drachen"):
        assert own_title({"title": title}, ["x.pdf"]) == title
    assert display_name(["b/z.pdf", "a/earnings.pdf"], "f" * 64) == "earnings.pdf"
    assert display_name(["https://example.org/docs/Guide%20One.html"], "f" * 64) == "Guide One.html"
    assert display_name(["https://example.org/"], "f" * 64) == "example.org"
    assert display_name([], "0123456789abcdef" * 4) == "0123456789ab"


def test_a_name_or_title_is_shown_without_controls_that_make_it_read_as_another() -> None:
    """A right-to-left override makes ``invoice<RLO>fdp.exe`` read as ``invoiceexe.pdf``: the
    page, the API and an agent show its letters in their own order."""
    shown = display_name(["uploads/invoice\u202efdp.exe"], "f" * 64)
    assert shown == "invoicefdp.exe"
    assert display_name(["a\u2066b\u2069\u2028c.pdf"], "f" * 64) == "ab c.pdf"
    assert own_title({"title": "Rules\u202e of the Game"}, ["x.pdf"]) == "Rules of the Game"
    arabic = "\u062f\u0644\u064a\u0644 \u0627\u0644\u0645\u0633\u062a\u062e\u062f\u0645.pdf"
    assert display_name([arabic], "f" * 64) == arabic, "right-to-left letters themselves stay"
