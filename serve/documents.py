"""One document as the server shows it: where it is, where it came from, its outputs, tags,
summary and pages, read from the bucket and the result zip."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bucketdigest.monitor.catalog import document_hash, sources_of
from bucketdigest.serve.results import NoSuchMember, ResultCache
from bucketdigest.shared import keys, queue
from bucketdigest.shared.errors import BucketdigestError, CorruptRecord, DamagedResult
from bucketdigest.shared.naming import display_name, own_title
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DigestRecords, Failure, OutputRecord, SourceRecord
from bucketdigest.shared.result import (
    DIGESTS,
    INFO,
    SUMMARY,
    TAGS,
    THUMBNAIL,
    is_page,
    merged_page,
    ocr_member,
    page_member,
    web_member,
)
from bucketdigest.shared.store import Store


class UnknownDocument(BucketdigestError):
    """The bucket has no trace of this document."""


def checked_hash(value: str, store: Store) -> str:
    """The document whose hash is ``value`` or starts with it (8 hex digits or more, any
    case), else UnknownDocument (nothing can be named so)."""
    shown = value[:70] + "..." if len(value) > 70 else value
    try:
        digest = document_hash(store, value)
    except BucketdigestError as exc:
        raise UnknownDocument(str(exc).replace(value, shown)) from exc
    if digest is None:
        if keys.hash_prefix(value) is None:
            raise UnknownDocument(f"{shown!r} is not a document hash (8 to 64 hex digits)")
        raise UnknownDocument(f"{shown}: no document's hash starts so")
    return digest


@dataclass(frozen=True)
class Page:
    number: int
    markdown: str
    ocr: str
    """Text read from the page's image by OCR (empty when the page had a text layer)."""
    linked: str = ""
    """For a link file, the main content of the page it points to."""

    @property
    def text(self) -> str:
        """The page as ``document.md`` has it: its Markdown, then its OCR text, then the
        linked page's."""
        return merged_page(self.markdown, f"{self.ocr}\n\n{self.linked}")


@dataclass(frozen=True)
class DocumentView:
    digest: str
    state: DocState
    sources: tuple[SourceRecord, ...]
    info: dict[str, Any]
    outputs: tuple[OutputRecord, ...]
    failure: Failure | None
    tags: tuple[str, ...]
    summary: str
    page_count: int
    has_thumbnail: bool
    damage: str | None = None
    """Why a done document's result cannot be read (it needs reprocessing), if it cannot."""

    @property
    def names(self) -> tuple[str, ...]:
        """The paths it was ingested from (the registry's, as search has them), else the
        names its result or its failure recorded."""
        registered = sorted({s.path for s in self.sources})
        if registered:
            return tuple(registered)
        return tuple(self.info.get("names") or (self.failure.ticket.names if self.failure else ()))

    @property
    def title(self) -> str:
        """The name a person gave it (:func:`~bucketdigest.shared.naming.display_name`)."""
        return display_name(self.names, self.digest)

    @property
    def own_title(self) -> str | None:
        """The document's own title (its metadata's), when it says something."""
        return own_title(self.info.get("metadata"), self.names)

    def to_dict(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "state": self.state.value,
            "title": self.title,
            "own_title": self.own_title,
            "names": list(self.names),
            "sources": [json.loads(s.to_json()) for s in self.sources],
            "info": self.info,
            "outputs": [json.loads(o.to_json()) for o in self.outputs],
            "error": self.failure.error if self.failure else None,
            "tags": list(self.tags),
            "summary": self.summary,
            "pages": self.page_count,
            "thumbnail": self.has_thumbnail,
            "damage": self.damage,
        }


def read_document(cache: ResultCache, digest: str) -> DocumentView:
    """Everything about ``digest`` but its pages; UnknownDocument when the bucket has none.
    A done document whose result is damaged comes with ``damage`` set and nothing read from
    its result, so its page can say so and offer to reprocess it."""
    store = cache.store
    digest = checked_hash(digest, store)
    state = queue.state_of(store, digest)
    if state is None:
        raise UnknownDocument(f"{digest}: no such document")
    try:
        failure = queue.read_failure(store, digest) if state is DocState.FAILED else None
    except CorruptRecord:  # its dead letter is damaged: the state alone is known
        failure = None

    # a done document: what its result says of it
    info: dict[str, Any] = {}
    outputs: tuple[OutputRecord, ...] = failure.outputs if failure else ()
    tags: tuple[str, ...] = ()
    summary = ""
    names: list[str] = []
    damaged: DamagedResult | None = None
    if state is DocState.DONE:
        try:
            names = cache.names(digest)
            found = cache.members(digest, [INFO, DIGESTS, TAGS, SUMMARY])
        except DamagedResult as exc:
            damaged, found = exc, {}
        info = json.loads(found.get(INFO, b"{}"))
        if DIGESTS in found:
            outputs = DigestRecords.from_json(found[DIGESTS]).outputs
        tags = tuple(t["keyword"] for t in json.loads(found.get(TAGS, b"[]")))
        summary = found.get(SUMMARY, b"").decode("utf-8", "replace").strip()
    return DocumentView(
        digest=digest,
        state=state,
        sources=tuple(sources_of(store, digest)),
        info=info,
        outputs=outputs,
        failure=failure,
        tags=tags,
        summary=summary,
        page_count=sum(1 for n in names if is_page(n)),
        has_thumbnail=THUMBNAIL in names,
        damage=damaged.reason if damaged else None,
    )


def read_pages(cache: ResultCache, digest: str, numbers: range) -> list[Page]:
    """Pages ``numbers`` (1-based) of a done document, with their OCR text (and a link
    file's linked page)."""
    wanted = [m for n in numbers for m in (page_member(n), ocr_member(n), web_member(n))]
    found = cache.members(checked_hash(digest, cache.store), wanted)
    return [
        Page(
            number=n,
            markdown=found[page_member(n)].decode("utf-8", "replace"),
            ocr=found.get(ocr_member(n), b"").decode("utf-8", "replace"),
            linked=found.get(web_member(n), b"").decode("utf-8", "replace"),
        )
        for n in numbers
        if page_member(n) in found
    ]


def read_page(cache: ResultCache, digest: str, number: int) -> Page:
    pages = read_pages(cache, digest, range(number, number + 1))
    if not pages:
        raise NoSuchMember(f"{digest}: the result has no page {number}")
    return pages[0]
