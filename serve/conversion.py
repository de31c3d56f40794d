"""The conversion a request to the drop-in APIs asks for (docling-serve's ``ocr_lang`` and
``force_ocr``, Unstructured's ``languages`` and ``ocr_only`` strategy): a document queued
with those settings of its own is converted with them; one already done without them is
converted again with them, and is not done for the request until then.

A language only matters where OCR read a page, and ``force_ocr`` only for a PDF, so a result
is never made again for what would not change it.
"""

from __future__ import annotations

from collections.abc import Sequence

from bucketdigest.serve.backend import Backend
from bucketdigest.shared import keys, queue
from bucketdigest.shared.ocr_languages import same_languages
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.result import DOCUMENT_STRUCTURE, ResultZip


def conversion_states(
    backend: Backend, digests: Sequence[str], wanted: DocumentSettings | None
) -> list[DocState | None]:
    """Each document's state for a request that asks for ``wanted``: one done otherwise is
    queued to be converted again as asked, and reads as queued or converting until then."""
    states = [queue.state_of(backend.store, digest) for digest in digests]
    if wanted is None:
        return states
    return [
        _redone(backend, digest, wanted) if state is DocState.DONE else state
        for digest, state in zip(digests, states, strict=True)
    ]


def _redone(backend: Backend, digest: str, wanted: DocumentSettings) -> DocState | None:
    """DONE when ``digest``'s result was made as ``wanted`` asks, else the state of its
    conversion with it (queued here unless it is already). A result that reads as made
    otherwise is read again from the store before it is queued: the server's copy can be
    older than a conversion that just ended, and queueing it then made it a second time."""
    if _made_as(backend, digest, wanted):
        return DocState.DONE
    backend.cache.revalidate(digest)
    if _made_as(backend, digest, wanted):
        return DocState.DONE
    for key in queue.marker_keys(digest):
        if backend.store.head(key) is not None:
            return DocState.of(keys.parse_queue_key(key)[0])
    backend.redo(digest, wanted)
    return DocState.TODO


def _made_as(backend: Backend, digest: str, wanted: DocumentSettings) -> bool:
    """Whether ``digest``'s result (as the server's cache has it) was made as ``wanted``
    asks: a language only matters where OCR read a page, ``force_ocr`` only for a PDF."""
    with ResultZip(backend.cache.zip_bytes(digest)) as result:
        info = result.info()
        pages = result.json(DOCUMENT_STRUCTURE, {}).get("pages") or []
    made = (info.get("provenance") or {}).get("chain_settings") or {}
    pdf = info.get("ext") == "pdf"
    forced = made.get("force_ocr") is True
    read_by_ocr = forced or any(isinstance(p, dict) and p.get("words") == "ocr" for p in pages)
    return (not wanted.force_ocr or forced or not pdf) and (
        wanted.ocr_language is None
        or same_languages(wanted.ocr_language, made.get("ocr_language"))
        or not read_by_ocr
    )
