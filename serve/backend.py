"""What the server's routes read and do, in one object shared by the API and the web pages:
the store, the result cache, a searcher kept warm, the status (briefly cached) and the writes.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from bucketdigest.ingestor.ingest import default_cache_dir
from bucketdigest.runner.bucket import Bucket
from bucketdigest.runner.rerun import reprocess_documents, retry_documents
from bucketdigest.search.cache import IndexCacheSettings
from bucketdigest.search.focus import Locations, focused_hit, regions_of
from bucketdigest.search.hit import Hit
from bucketdigest.search.location import index_location
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import SearchRequest
from bucketdigest.serve import privacy
from bucketdigest.serve.documents import (
    DocumentView,
    UnknownDocument,
    checked_hash,
    read_document,
)
from bucketdigest.serve.page_images import (
    PAGE_IMAGE_PIXELS,
    PAGE_IMAGES_KEPT,
    PageImage,
    render_page,
)
from bucketdigest.serve.results import CacheSettings, ResultCache
from bucketdigest.shared import queue
from bucketdigest.shared.chain import DIGESTERS, known_digester
from bucketdigest.shared.config import MAX_UPLOAD_BYTES, StoreSettings
from bucketdigest.shared.errors import (
    BucketdigestError,
    ConfigError,
    Conflict,
    DamagedSettings,
    SearchIndexError,
)
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.result import CHUNKS, DOCUMENT_STRUCTURE
from bucketdigest.shared.tokens import Scope, verify_token


class BadRequest(BucketdigestError):
    """A request naming something that cannot exist (a digester, say)."""


class NotPossible(BucketdigestError):
    """A write the document's state does not allow (reprocessing one that is not done)."""


class WritesOff(BucketdigestError):
    """The server was started without ``--allow-writes``."""


class NotAuthorized(BucketdigestError):
    """A write came without the right token."""

    def __init__(self, message: str, *, missing: bool) -> None:
        super().__init__(message)
        self.missing = missing


MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class ServeSettings:
    store: StoreSettings = field(default_factory=StoreSettings)
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    """Writes (retry, reprocess) are allowed only with a token, given as a bearer token."""
    cache: CacheSettings = field(default_factory=CacheSettings)
    cors_origins: tuple[str, ...] = ()
    refresh_seconds: float = 10.0
    """How stale the searcher's view of the index and the status may be."""
    allowed_hosts: tuple[str, ...] = ()
    """Names clients may reach the server by, besides its address and loopback names."""
    index_cache: IndexCacheSettings = field(default_factory=IndexCacheSettings)
    processes: int = 1
    """Server processes answering at once (``serve --processes``)."""
    mcp: bool = False
    """Also answer AI assistants over the Model Context Protocol at ``/mcp``."""
    broker: bool = False
    """Also broker work for workers without bucket credentials (:mod:`.broker`)."""
    show_locations: bool = False
    """Show source folders and worker ids to every client (see :mod:`.privacy`)."""
    require_token: bool = False
    """Every route but the health check asks for a read token (:mod:`.access`)."""
    public_metrics: bool = False
    """With ``require_token``, ``/metrics`` stays open (a Prometheus scraper without one)."""
    max_upload: int = MAX_UPLOAD_BYTES
    """The most bytes one upload request carries (``--max-upload``)."""
    sync_wait: float = 120.0
    """How long a synchronous conversion (docling-serve's ``/v1/convert/file``, Unstructured's
    partition) waits for the fleet before it answers as those services do when out of time
    (``--sync-wait``)."""

    def __post_init__(self) -> None:
        if self.token is not None and len("".join(self.token.split())) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"the serve token needs at least {MIN_TOKEN_CHARS} characters that are not "
                "spaces: make one with `openssl rand -hex 24`"
            )

    @property
    def allow_writes(self) -> bool:
        return bool(self.token)


LOCATIONS_KEPT = 256
"""Documents whose chunks' and blocks' places a server keeps in memory."""
HITS_KEPT = 10_240
"""Hits a server keeps of the searches it answered for the index version it reads (see
:meth:`Backend.search`): a thousand answers of ten hits, fewer of more. Counted in hits, not
answers, so that requests for a thousand hits each cannot fill the server's memory."""

SEARCHES_AT_ONCE = 2
"""Searches a server process works on at once; the others wait their turn (a search asked
again, or asked while the same is under way, does not: it is answered from what is kept).
A search is CPU work (the query's vector, scoring, snippets, regions), and a server runs a
process per core by default (``serve --processes``); twenty at once in one process each ran a
twentieth as fast, fighting over Python's lock and the caches: 20
clients on 2 processes on 2 cores, each query asked once (scripts/bench/serving.py's load),
alternating runs, anyio's 40 threads at once against 2: 166/171, 126/159, 120/121 and 122/146
searches/s, p95 190/153, 280/172, 298/214 and 266/179 ms."""


@dataclass(frozen=True)
class _Answer:
    """A search's hits as shown, and the versions of the results their regions were read
    from."""

    hits: list[Hit]
    versions: tuple[str, ...]

    @property
    def size(self) -> int:
        """What it counts for against :data:`HITS_KEPT` (an answer without hits, one)."""
        return max(1, len(self.hits))


class _Answers:
    """The answers last asked for, up to ``most`` hits in all (the least recently asked
    dropped first); not thread-safe."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: OrderedDict[SearchRequest, _Answer] = OrderedDict()
        self._size = 0

    def get(self, request: SearchRequest) -> _Answer | None:
        answer = self._kept.get(request)
        if answer is not None:
            self._kept.move_to_end(request)
        return answer

    def put(self, request: SearchRequest, answer: _Answer) -> None:
        if answer.size > self.most:
            return
        former = self._kept.pop(request, None)
        self._size += answer.size - (former.size if former else 0)
        self._kept[request] = answer
        while self._size > self.most:
            _, dropped = self._kept.popitem(last=False)
            self._size -= dropped.size

    def clear(self) -> None:
        self._kept.clear()
        self._size = 0


class Backend:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.bucket = Bucket(settings.store, index_cache=settings.index_cache, check_writes=False)
        self.store = self.bucket.store
        self.cache = ResultCache(self.store, settings.cache)
        self._searcher: tuple[Searcher, float] | None = None
        self._status: tuple[dict[str, Any], float] | None = None
        self._lock = threading.Lock()
        self._page_images: dict[tuple[str, int, int], PageImage] = {}
        self._locations: OrderedDict[str, Locations] = OrderedDict()
        self._answers = _Answers(HITS_KEPT)
        """Hits by request, for the searcher in ``_searcher`` (emptied when it changes)."""
        self._answering: dict[tuple[Searcher, SearchRequest], Future[list[Hit]]] = {}
        """The searches being answered, for the same requests to wait on."""
        self._working = threading.BoundedSemaphore(SEARCHES_AT_ONCE)

    def close(self) -> None:
        self.cache.close()

    def _fresh(self, stamp: float) -> bool:
        return time.monotonic() - stamp < self.settings.refresh_seconds

    def searcher(self) -> Searcher:
        """The searcher, looked at again when older than ``refresh_seconds`` so new
        documents show; kept while the index has no new version (its caches stay warm)."""
        with self._lock:
            if self._searcher and self._fresh(self._searcher[1]):
                return self._searcher[0]
        try:
            searcher = self.bucket.searcher()
        except SearchIndexError as exc:
            raise type(exc)(self._told(str(exc))) from exc
        with self._lock:
            if self._searcher and self._searcher[0].reads_the_same_index_as(searcher):
                searcher = self._searcher[0]
            else:
                self._answers.clear()
            self._searcher = (searcher, time.monotonic())
        return searcher

    def _told(self, message: str) -> str:
        """An index error message as this server's clients may read it."""
        if self.settings.show_locations:
            return message
        return privacy.without_location(message, index_location(self.settings.store).uri)

    def search(self, request: SearchRequest) -> list[Hit]:
        """The hits as this server shows them. A request asked again while the index has no
        new version gets the hits it got (people repeat searches, a web page asks passages
        and documents for one query, an agent asks again), unless a result they point into
        changed since or the index had lost files (the hits then vary as the stand-in is
        read); one asked while the same is being answered waits for that answer: the
        searcher's and the regions' work is done once. At most :data:`SEARCHES_AT_ONCE` are
        worked on at once."""
        request = request.validated()
        searcher = self.searcher()
        with self._lock:
            kept = self._answers.get(request)
        if kept is not None and kept.versions == self._versions(kept.hits):
            return list(kept.hits)
        with self._lock:
            answering = self._answering.get((searcher, request))
            mine = answering is None
            if answering is None:
                answering = self._answering[searcher, request] = Future()
        if not mine:
            return list(answering.result())
        try:
            with self._working:
                hits = self._answer(searcher, request)
            answering.set_result(hits)
        except BaseException as exc:
            answering.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._answering[searcher, request]
        return list(hits)

    def _answer(self, searcher: Searcher, request: SearchRequest) -> list[Hit]:
        """``searcher``'s hits for ``request`` with their regions, kept for the next time
        it is asked while no index file is lost."""
        hits = [self._focused(hit, request.query) for hit in searcher.search(request)]
        if not self.settings.show_locations:
            hits = [privacy.public_hit(h) for h in hits]
        if searcher.damage is None:
            answer = _Answer(hits, self._versions(hits))
            with self._lock:
                if self._searcher and self._searcher[0] is searcher:
                    self._answers.put(request, answer)
        return hits

    def _versions(self, hits: list[Hit]) -> tuple[str, ...]:
        """The versions of the results ``hits``' regions come from ("" where none can be
        read: such a hit has no regions)."""
        versions = []
        for hit in hits:
            try:
                versions.append(self.cache.version(hit.digest) if hit.chunk_id else "")
            except BucketdigestError:
                versions.append("")
        return tuple(versions)

    def _located(self, digest: str) -> Locations:
        """Where the chunks and blocks of ``digest`` stand (read once per version of its
        result, the last :data:`LOCATIONS_KEPT` documents' kept): no zip is read per hit."""
        version = self.cache.version(digest)
        with self._lock:
            if version in self._locations:
                self._locations.move_to_end(version)
                return self._locations[version]
        try:
            found = self.cache.members(digest, [CHUNKS, DOCUMENT_STRUCTURE])
            located = Locations.read(found.get(CHUNKS, b""), found.get(DOCUMENT_STRUCTURE, b""))
        except BucketdigestError:  # damaged, or gone since: hits without regions
            located = Locations({}, {})
        with self._lock:
            self._locations[version] = located
            while len(self._locations) > LOCATIONS_KEPT:
                self._locations.popitem(last=False)
        return located

    def _focused(self, hit: Hit, query: str) -> Hit:
        if hit.chunk_id is None:
            return hit
        try:
            located = self._located(hit.digest)
        except BucketdigestError:
            return hit
        return focused_hit(hit, located.chunks.get(hit.chunk_id), located.blocks, query)

    def passage_regions(
        self, digest: str, chunk_id: str, focus: tuple[str, ...] = ()
    ) -> tuple[dict[str, float], ...]:
        """Where the blocks ``focus`` of chunk ``chunk_id`` stand (the page view of a hit);
        the whole chunk's regions when ``focus`` names none of its blocks."""
        located = self._located(digest)
        chunk = located.chunks.get(chunk_id)
        if chunk is None:
            return ()
        mine = set(chunk["blocks"]) & set(focus)
        picked = [located.blocks[i] for i in chunk["blocks"] if i in mine and i in located.blocks]
        return regions_of(picked) or tuple(chunk["regions"])

    def page_size(self, digest: str, page: int) -> dict[str, float] | None:
        """Page ``page``'s width and height in points (``document.json``), or None when the
        document has no such page with a size."""
        try:
            structure = json.loads(self.cache.member(digest, DOCUMENT_STRUCTURE))
        except (BucketdigestError, ValueError):
            return None
        for entry in structure.get("pages", []):
            if entry.get("page") == page and entry.get("width"):
                return {"width": entry["width"], "height": entry["height"]}
        return None

    def page_image(self, digest: str, page: int, long_side: int = PAGE_IMAGE_PIXELS) -> PageImage:
        """Page ``page`` of a paged document, rendered from its source ``long_side`` pixels on
        its long side (the last few kept in memory)."""
        digest = checked_hash(digest, self.store)
        key = (digest, page, long_side)
        with self._lock:
            if key in self._page_images:
                return self._page_images[key]
        image = render_page(self.store, digest, page, long_side)
        with self._lock:
            self._page_images[key] = image
            while len(self._page_images) > PAGE_IMAGES_KEPT:
                self._page_images.pop(next(iter(self._page_images)))
        return image

    def member(self, digest: str, name: str) -> bytes:
        """One member of a done document's result zip, as this server's clients may read it."""
        data = self.cache.member(checked_hash(digest, self.store), name)
        return data if self.settings.show_locations else privacy.public_member(name, data)

    def document(self, digest: str) -> DocumentView:
        view = read_document(self.cache, digest)
        return view if self.settings.show_locations else privacy.public_document(view)

    def status(self) -> dict[str, Any]:
        """Counts, throughput, ETA, failures, runs and index freshness, as JSON data."""
        with self._lock:
            if self._status and self._fresh(self._status[1]):
                return self._status[0]
        seen = self.bucket.overview()
        if not self.settings.show_locations:
            seen = replace(seen, status=privacy.public_status(seen.status))
        data = seen.to_dict(self._told)
        with self._lock:
            self._status = (data, time.monotonic())
        return data

    def bucket_settings(self) -> dict[str, Any]:
        """The bucket's settings as JSON data (``version``, ``updated_at`` and each setting,
        null where unset)."""
        return self.bucket.settings.public()

    def configure(self, changes: dict[str, Any], token: str | None) -> dict[str, Any]:
        """Set settings for the whole fleet (a new version); BadRequest for an unknown or
        invalid one, NotPossible when they changed meanwhile."""
        self.authorize(token)
        try:
            return self.bucket.configure(**changes).public()
        except DamagedSettings:
            raise  # the bucket's record, not the request: 503
        except ConfigError as exc:
            raise BadRequest(str(exc)) from exc
        except Conflict as exc:
            raise NotPossible(str(exc)) from exc

    def authorize(self, token: str | None, scope: Scope = Scope.WRITE) -> None:
        """Raise unless writes are on and ``token`` is the server's token or a bucket token
        with ``scope`` (``write`` by default; ``upload`` to send documents in)."""
        if not self.settings.token:
            raise WritesOff("writes are off: start the server with --allow-writes")
        if not token:
            raise NotAuthorized("this needs the server's token (Bearer)", missing=True)
        if hmac.compare_digest(token.encode(), self.settings.token.encode()):
            return
        if verify_token(self.store, token, scope) is None:
            raise NotAuthorized(f"this token is unknown, revoked or may not {scope}", missing=False)

    def retry(self, digest: str, token: str | None) -> bool:
        """Put a failed document back in line (its source fetched again first if a cleanup-mode
        worker deleted it, as ``bucketdigest retry`` does); False if it was not failed,
        UnknownDocument if the bucket has no trace of it, NotPossible if its source is gone."""
        self.authorize(token)
        digest = checked_hash(digest, self.store)
        state = queue.state_of(self.store, digest)
        if state is None:
            raise UnknownDocument(f"{digest}: no such document")
        if state is not DocState.FAILED:
            return False
        requeued, cannot = retry_documents(self.store, [digest], default_cache_dir())
        if digest in cannot:
            raise NotPossible(f"{digest}: cannot retry: {cannot[digest]}")
        return bool(requeued)

    def redo(self, digest: str, settings: DocumentSettings) -> None:
        """Convert a done document again, the whole chain, with ``settings`` of its own over
        those it was made with (a conversion request's OCR options)."""
        reprocess_documents(self.store, [digest], None, False, default_cache_dir(), settings)

    def reprocess(self, digest: str, digester: str | None, token: str | None) -> list[str]:
        """Run ``digester`` (default: the whole chain) again on a done document; returns the
        digesters that will run. NotPossible when it has no result to work from."""
        self.authorize(token)
        name = digester or DIGESTERS[0]
        try:
            known_digester(name)
        except KeyError as exc:
            raise BadRequest(exc.args[0]) from exc
        digest = checked_hash(digest, self.store)
        report = reprocess_documents(self.store, [digest], name, False, default_cache_dir())
        if digest in report.skipped:
            raise NotPossible(f"{digest}: cannot reprocess: {report.skipped[digest]}")
        return report.requeued.get(digest, [])
