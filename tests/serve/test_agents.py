"""AI assistants over the Model Context Protocol, driven by the SDK's own client through both
transports (stdio: ``bucketdigest mcp``; streamable HTTP: ``serve --mcp``) against a bucket
filled by a real worker."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
from typing import Any

import PIL.Image
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from tests.serve.conftest import Served

TOOLS = {"search", "get_document", "get_page", "get_page_image", "list_documents", "status"}


def _data(result: Any) -> Any:
    """A tool's answer as data (its structured content, else its JSON text)."""
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(result.content[0].text)


async def _session(client: Client, served: Served) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == TOOLS
    hits = _data(await client.call_tool("search", {"query": "boarding the enemy ship"}))
    assert hits[0]["names"] == ["naval/broadsides.md"]
    assert {"digest", "names", "page", "headings", "score"} <= set(hits[0]), "the API's words"
    assert hits[0]["cite"].startswith("naval/broadsides.md")
    long_pdf = served.digests["rulebooks/long.pdf"]
    document = _data(await client.call_tool("get_document", {"document": "long.pdf"}))
    assert document["digest"] == long_pdf and document["pages"] == 25 and document["tags"]
    first = _data(
        await client.call_tool("get_page", {"document": long_pdf, "page": 3, "max_chars": 200})
    )
    assert first["cite"] == "rulebooks/long.pdf, page 3"
    assert len(first["text"]) == 200 and first["next_offset"] == 200
    rest = _data(
        await client.call_tool(
            "get_page", {"document": long_pdf, "page": 3, "offset": 200, "max_chars": 100_000}
        )
    )
    assert rest["next_offset"] is None and rest["text"]

    # a passage of a PDF: its regions on the page, the view that shows it, the page's image
    found = _data(await client.call_tool("search", {"query": "The Long Rulebook", "limit": 20}))
    on_pdf = next(h for h in found if h["digest"] == long_pdf)
    assert [h["digest"] for h in found[:4]] == [long_pdf] * 4, "the document the query is about"
    asked = {"query": "The Long Rulebook", "limit": 20, "mode": "keyword"}
    shown = [h for h in _data(await client.call_tool("search", asked)) if h["digest"] == long_pdf]
    assert len(shown) == 3 and shown[-1]["more"] > 0, "a few passages, then more on request"
    rest = _data(
        await client.call_tool(
            "search", {"query": "The Long Rulebook", "limit": 20, "document": long_pdf}
        )
    )
    assert {h["digest"] for h in rest} == {long_pdf} and len(rest) > 3
    assert on_pdf["regions"] and on_pdf["regions"][0]["page"] == on_pdf["page"]
    assert on_pdf["view"].startswith(f"/documents/{long_pdf}/pages/{on_pdf['page']}?chunk=")
    image = await client.call_tool("get_page_image", {"document": long_pdf, "page": 1})
    shown = PIL.Image.open(io.BytesIO(base64.b64decode(image.content[0].data)))
    assert image.content[0].mime_type == f"image/{shown.format.lower()}"
    assert max(shown.size) == 1000 and len(base64.b64decode(image.content[0].data)) < 300_000
    sharper = await client.call_tool(
        "get_page_image", {"document": long_pdf, "page": 1, "size": 2000}
    )
    assert max(PIL.Image.open(io.BytesIO(base64.b64decode(sharper.content[0].data))).size) == 2000
    listed = _data(await client.call_tool("list_documents", {"limit": 4}))
    assert len(listed["documents"]) == 4 and listed["next_cursor"] == "4"
    more = _data(await client.call_tool("list_documents", {"cursor": "4"}))
    assert {d["path"] for d in listed["documents"] + more["documents"]} >= set(served.digests)
    status = _data(await client.call_tool("status", {}))
    assert status["counts"]["done"] == 8
    schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    assert schemas["search"]["additionalProperties"] is False
    assert schemas["search"]["properties"]["limit"]["maximum"] == 1000
    assert schemas["get_page"]["properties"]["page"]["minimum"] == 1
    for name, arguments, reason in (
        ("get_page", {"document": long_pdf, "page": 0}, "page must be ≥ 1"),
        ("get_page", {"document": long_pdf[:10], "page": 999}, "has no page 999"),
        ("get_document", {"document": "no/such/file.pdf"}, "no registered file has this path"),
        ("get_document", {"document": "0000000000ff"}, "no document's hash starts so"),
        ("search", {"query": " "}, "the query is empty: say what to look for"),
        ("search", {"query": "x" * 5000}, "at most 1000 characters"),
        ("search", {"query": "x", "limit": 100_000}, "limit must be ≤ 1000"),
        ("search", {"query": "x", "mode": "magic"}, "'hybrid', 'keyword' or 'semantic'"),
        ("search", {"query": "x", "colour": "red"}, "colour is not an argument"),
        ("get_page_image", {"document": long_pdf, "page": 1, "size": 9}, "size must be ≥ 100"),
        ("list_documents", {"cursor": "not-a-cursor"}, "cursor must match"),
    ):
        answer = await client.call_tool(name, arguments)
        told = answer.content[0].text
        assert answer.is_error and reason in told, (name, arguments, told)
        assert "Traceback" not in told and len(told) < 2000
        assert "pydantic" not in told and "[type=" not in told, "the API's words, no dump"
    markdown = await client.read_resource(f"bucketdigest://documents/{long_pdf}/markdown")
    assert "The Long Rulebook" in markdown.contents[0].text


@pytest.mark.slow
def test_an_assistant_searches_and_reads_over_stdio(served: Served) -> None:
    command = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bucketdigest", "mcp", "--bucket", served.settings.bucket],
    )

    async def run() -> None:
        async with Client(command, read_timeout_seconds=120) as client:
            await _session(client, served)

    asyncio.run(run())


def test_an_assistant_searches_and_reads_over_http_beside_the_web_page(served: Served) -> None:
    settings = ServeSettings(store=served.settings, port=0, mcp=True)

    async def run(url: str) -> None:
        async with Client(f"{url}/mcp", read_timeout_seconds=120) as client:
            await _session(client, served)

    with background_server(settings) as url:
        asyncio.run(run(url))
