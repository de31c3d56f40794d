"""The bucket for AI assistants, over the Model Context Protocol (the official ``mcp`` SDK):
``bucketdigest mcp`` on stdio for desktop assistants and editors, ``serve --mcp`` at ``/mcp``
(streamable HTTP) beside the web page. Read-only, like the anonymous API; what an anonymous
client may not see (source folders, worker ids) it does not see either.

Every answer names its document and page, so an assistant can cite them ("rules/core.pdf,
page 12"). A page is sent in slices of at most ``max_chars`` characters with the offset of the
next one, so a long page never floods a context window.

A failing call tells the assistant why, in the words the HTTP API uses (``... has no page
999``, ``the query is empty: say what to look for``): the SDK passes on the text of a
``ToolError`` only, so our errors become one. Every argument's schema carries its bounds, and
an argument a tool does not take is refused rather than dropped.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field

from bucketdigest.runner.listing import find_digest, list_files
from bucketdigest.search.cache import IndexCacheSettings
from bucketdigest.search.request import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    PER_DOCUMENT,
    Level,
    Mode,
    SearchRequest,
)
from bucketdigest.serve import privacy
from bucketdigest.serve.backend import Backend, ServeSettings
from bucketdigest.serve.documents import checked_hash, read_page
from bucketdigest.serve.page_images import (
    MAX_PAGE_IMAGE_PIXELS,
    MIN_PAGE_IMAGE_PIXELS,
    PAGE_IMAGE_PIXELS,
)
from bucketdigest.serve.reasons import argument_problems
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.result import DOCUMENT

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool

INSTRUCTIONS = (
    "Search and read the documents of one bucketdigest bucket (PDFs, e-books, notes, web "
    "pages turned into Markdown). Start with `search`; open what you need with `get_page` "
    "(paged: follow next_offset) or `get_document`; look at a page with `get_page_image`. "
    "Cite the `cite` field of what you use."
)
PAGE_CHARS = 20_000
"""Characters of a page sent at once unless asked otherwise."""
MAX_PAGE_CHARS = 200_000
LIST_LIMIT = 100
MAX_LIST_LIMIT = 1000
Document = Annotated[
    str,
    Field(
        min_length=1,
        max_length=4096,
        description="A hash (8 hex digits or more of it), an ingested path or a unique end of one",
    ),
]


def _cite(names: tuple[str, ...] | list[str], title: str, page: int | None) -> str:
    name = names[0] if names else title
    return f"{name}, page {page}" if page else name


def agent_transport(settings: ServeSettings) -> dict[str, Any]:
    """How ``serve --mcp`` serves the protocol: at ``/mcp``, each request on its own (no
    session state to lose between processes), JSON answers; the Host check is the server's
    own (:mod:`.guards`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    return {
        "streamable_http_path": "/mcp",
        "stateless_http": True,
        "json_response": True,
        "transport_security": TransportSecuritySettings(enable_dns_rebinding_protection=False),
        "host": settings.host,
    }


def _answering(tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool``, its failures (ours, and a ValueError of a bad argument) raised as ToolError,
    whose text the SDK hands to the assistant (any other exception reaches it as a bare
    "Error executing tool")."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def answered(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except (BucketdigestError, ValueError) as exc:
            raise ToolError(str(exc)) from exc

    return answered


def _strict(tool: Tool) -> Tool:
    """``tool`` refusing arguments it does not take (its schema says so too), and telling a
    bad argument's reason in the API's words."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from pydantic import ValidationError

    base = tool.fn_metadata.arg_model

    class StrictArguments(base):  # type: ignore[valid-type, misc]
        model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    class ReasonedTool(Tool):
        async def run(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().run(*args, **kwargs)
            except ToolError as exc:
                if not isinstance(exc.__cause__, ValidationError):
                    raise
                reasons = argument_problems(exc.__cause__.errors())
                raise ToolError(f"Error executing tool {self.name}: {reasons}") from exc.__cause__

    metadata = tool.fn_metadata.model_copy(update={"arg_model": StrictArguments})
    parameters = {**tool.parameters, "additionalProperties": False}
    fields = {name: getattr(tool, name) for name in type(tool).model_fields}
    return ReasonedTool.model_construct(
        **{**fields, "fn_metadata": metadata, "parameters": parameters}
    )


def build_agent_server(backend: Backend) -> MCPServer:
    """The MCP server of the bucket ``backend`` reads: its tools and resources."""
    from mcp.server.mcpserver import MCPServer  # the SDK loads only when agents are served
    from mcp.server.mcpserver.exceptions import ResourceError
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.types import Image

    def digest_of(document: str) -> str:
        return find_digest(backend.settings.store, document)

    def search(
        query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)],
        level: Literal["chunks", "documents"] = "chunks",
        mode: Literal["hybrid", "keyword", "semantic"] = "hybrid",
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10,
        path: str | None = None,
        file_type: str | None = None,
        tag: str | None = None,
        document: str | None = None,
        per_document: Annotated[int, Field(ge=0, le=MAX_LIMIT)] = PER_DOCUMENT,
    ) -> list[dict[str, Any]]:
        """Search every document: passages (level "chunks") or whole documents. mode hybrid
        (default) combines keyword (exact words, quote a phrase) and semantic (meaning).
        Filters: path (a glob on the ingested path), file_type (pdf, md...), tag. At most
        per_document passages of one document are returned (0: no cap); a hit whose "more"
        is above 0 has more passages in its document: search again with document set to
        its digest to read them. "repeats" counts other places holding the same text."""
        request = SearchRequest(
            query,
            Level(level),
            Mode(mode),
            limit,
            path=path,
            file_type=file_type,
            tag=tag,
            document=document,
            per_document=per_document,
        )
        return [
            {
                "digest": hit.digest,
                "title": hit.title,
                "names": list(hit.names),
                "page": hit.page,
                "headings": list(hit.headings),
                "snippet": hit.snippet.text,
                "score": round(hit.score, 4),
                "cite": _cite(hit.names, hit.title, hit.page),
                "regions": [dict(r) for r in hit.regions],
                "view": hit.view,
                "more": hit.more,
                "repeats": hit.repeats,
            }
            for hit in backend.search(request)
        ]

    def get_document(document: Document) -> dict[str, Any]:
        """A document's metadata, tags, summary, problems found while reading it, state and
        page count. ``document``: its hash, or an ingested path (or a unique end of one)."""
        view = backend.document(digest_of(document))
        data = view.to_dict()
        return {
            "digest": view.digest,
            "title": view.title,
            "own_title": view.own_title,
            "names": list(view.names),
            "state": data["state"],
            "pages": view.page_count,
            "tags": list(view.tags),
            "summary": view.summary,
            "problems": list(view.info.get("problems", [])),
            "metadata": view.info.get("metadata", {}),
            "error": data["error"],
            "cite": _cite(view.names, view.title, None),
        }

    def get_page(
        document: Document,
        page: Annotated[int, Field(ge=1)],
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=1, le=MAX_PAGE_CHARS)] = PAGE_CHARS,
    ) -> dict[str, Any]:
        """Page ``page`` (1-based) of a document as Markdown, with the text OCR read from its
        images. Long pages come in slices: ask again with ``offset=next_offset`` until it is
        null. The page as an image: get_page_image."""
        digest = digest_of(document)
        view = backend.document(digest)
        text = read_page(backend.cache, digest, page).text
        end = min(len(text), offset + max_chars)
        return {
            "digest": digest,
            "page": page,
            "pages": view.page_count,
            "text": text[offset:end],
            "offset": offset,
            "next_offset": end if end < len(text) else None,
            "cite": _cite(view.names, view.title, page),
        }

    def get_page_image(
        document: Document,
        page: Annotated[int, Field(ge=1)],
        size: Annotated[
            int, Field(ge=MIN_PAGE_IMAGE_PIXELS, le=MAX_PAGE_IMAGE_PIXELS)
        ] = PAGE_IMAGE_PIXELS,
    ) -> Any:
        """Page ``page`` (1-based) of a paged document (PDF, e-book) as an image, to look at
        what the text alone does not say (a figure, a table's layout, where a passage stands:
        search hits give their ``regions`` on the page in PDF points, origin top-left).
        ``size``: pixels on the long side (default 1000: an A4 page is 707 by 1000 pixels,
        usually 100 to 300 KB, as PNG or JPEG, whichever is smaller); ask more to read small
        print."""
        image = backend.page_image(digest_of(document), page, size)
        return Image(data=image.data, format=image.format)

    def list_documents(
        path: str | None = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = LIST_LIMIT,
        cursor: Annotated[str | None, Field(pattern=r"^[0-9]{1,12}$")] = None,
    ) -> dict[str, Any]:
        """Ingested documents with their state, in path order; ``path`` narrows by glob
        (``rules/*.pdf``). Pass ``next_cursor`` back as ``cursor`` for the next ones."""
        start = int(cursor or 0)
        entries = sorted(list_files(backend.settings.store), key=lambda e: e.path)
        if path:
            entries = [e for e in entries if fnmatch.fnmatchcase(e.path, path)]
        chosen = entries[start : start + limit]
        shown = backend.settings.show_locations
        return {
            "documents": [
                {
                    "path": e.path,
                    "source": e.source if shown else privacy.public_source(e.source),
                    "digest": e.digest,
                    "state": e.state.value if e.state else "unknown",
                }
                for e in chosen
            ],
            "next_cursor": str(start + limit) if start + limit < len(entries) else None,
        }

    def status() -> dict[str, Any]:
        """How many documents are waiting, being processed, failed and done; the rate and time
        left; recent failures; damaged objects; the search index's size and freshness."""
        return backend.status()

    tools = (search, get_document, get_page, get_page_image, list_documents, status)
    server = MCPServer(
        "bucketdigest",
        instructions=INSTRUCTIONS,
        tools=[_strict(Tool.from_function(_answering(tool))) for tool in tools],
    )

    @server.resource(
        "bucketdigest://documents/{digest}/markdown",
        name="document",
        mime_type="text/markdown",
        description="A done document's whole Markdown, pages in order.",
    )
    def document_markdown(digest: str) -> str:
        try:
            found = backend.cache.members(checked_hash(digest, backend.store), [DOCUMENT])
        except BucketdigestError as exc:
            raise ResourceError(str(exc)) from exc
        if DOCUMENT not in found:
            raise ResourceError(f"{digest} has no Markdown (is it done?)")
        return found[DOCUMENT].decode("utf-8", "replace")

    return server


def serve_stdio(
    store: StoreSettings, index_cache: IndexCacheSettings, *, show_locations: bool = False
) -> None:
    """Answer one assistant on stdin/stdout until it closes them (``bucketdigest mcp``)."""
    settings = ServeSettings(store=store, index_cache=index_cache, show_locations=show_locations)
    backend = Backend(settings)
    try:
        build_agent_server(backend).run("stdio")
    finally:
        backend.close()
