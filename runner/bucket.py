"""One opened bucket for Python users (``from bucketdigest import Bucket``): the store, its
settings and its index together. Every command of the CLI is one of its calls, with the same
behaviour (``work`` with its monitor duty and indexing, ``ingest`` with ``~`` expanded, and so
on); README.md's example, which a test runs as written:

```python
from bucketdigest import Bucket

bucket = Bucket("./library")                      # or "s3://my-bucket/digest"
bucket.ingest("~/pdfs", ext="pdf,text")           # queue what the bucket lacks
bucket.work()                                     # digest until the queue is empty, indexed
for hit in bucket.search("how does grappling work", limit=3):
    print(hit.names[0], hit.page, hit.snippet.text)
with bucket.result("rules/core.pdf") as result:   # a path or a hash
    print(result.text("document.md")[:200])
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bucketdigest.ingestor.inbox import take_files, take_inbox
from bucketdigest.ingestor.ingest import (
    IngestReport,
    IngestSettings,
    default_cache_dir,
    ingest_sources,
)
from bucketdigest.monitor.catalog import CatalogEntry
from bucketdigest.monitor.loop import MonitorPass, run_monitor
from bucketdigest.monitor.purge import PurgeRule
from bucketdigest.monitor.repair import prioritize
from bucketdigest.monitor.status import Status, collect_status
from bucketdigest.monitor.sweep import MonitorSettings
from bucketdigest.runner.lifecycle import Removal, purge_bucket, remove
from bucketdigest.runner.listing import default_destination, find_digest, get_result, list_files
from bucketdigest.runner.local import RunReport, run_local
from bucketdigest.runner.overview import Overview, overview
from bucketdigest.runner.passages import Passage, passages, read_chunks
from bucketdigest.runner.rerun import (
    RepairReport,
    repair_bucket,
    reprocess_documents,
    retry_documents,
)
from bucketdigest.runner.wiring import work_bucket
from bucketdigest.search.cache import IndexCache, IndexCacheSettings, open_cache
from bucketdigest.search.hit import Hit
from bucketdigest.search.indexer import IndexReport, index_bucket
from bucketdigest.search.location import IndexLocation, index_location
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Level, Mode, SearchRequest
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import (
    BucketSettings,
    change_settings,
    current_events_secret,
    parsed,
    read_settings,
    replace_settings,
    stored_settings,
)
from bucketdigest.shared.chain import DIGESTERS
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import DamagedResult, SourceError
from bucketdigest.shared.filetypes import expand_extensions
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.result import DOCUMENT_STRUCTURE, ResultZip, damage
from bucketdigest.shared.store import Store
from bucketdigest.shared.tokens import (
    DEFAULT_WORKERS,
    AccessToken,
    Scope,
    add_token,
    list_tokens,
    revoke_token,
)
from bucketdigest.worker.loop import WorkerSettings, WorkerSummary
from bucketdigest.worker.reprocess import ReprocessReport

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument


class Bucket:
    """A bucket (a local folder or ``s3://bucket/prefix``) opened once."""

    def __init__(
        self,
        url: str | Path | StoreSettings,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        path_style: bool = False,
        index_cache: IndexCacheSettings | None = None,
        check_writes: bool = True,
    ) -> None:
        if isinstance(url, StoreSettings):
            self.store_settings = url
        else:
            self.store_settings = StoreSettings(
                bucket=str(url), endpoint_url=endpoint_url, region=region, path_style=path_style
            )
        self.index_cache = index_cache or IndexCacheSettings()
        self.check_writes = check_writes
        """Check the store's conditional writes when it is first used (False for readers,
        whose keys may not write)."""

    def __repr__(self) -> str:
        return f"Bucket({self.store_settings.bucket!r})"

    @cached_property
    def store(self) -> Store:
        """The store, opened (and its conditional writes checked) on first use."""
        return open_store(self.store_settings, self_test=self.check_writes)

    @property
    def index_location(self) -> IndexLocation:
        return index_location(self.store_settings)

    def ingest(
        self,
        *sources: str | Path,
        ext: str | None = None,
        settings: IngestSettings | None = None,
    ) -> IngestReport:
        """Upload what the bucket lacks from folders, files, Git repositories or (with
        ``settings.crawl``) web sites, and queue it. ``ext``: extensions or groups to take,
        as ``--ext`` says them (``"pdf,text"``, ``"all"``; default: PDFs). A local source that
        does not exist raises SourceError; a file that cannot be read is in the report's
        errors."""
        return ingest_sources(
            self.store, [self._source(s) for s in sources], self._ingest_settings(ext, settings)
        )

    def upload(
        self,
        *files: str | Path,
        names: Sequence[str] | None = None,
        priority: Priority = Priority.NORMAL,
        settings: DocumentSettings | None = None,
    ) -> IngestReport:
        """Hand documents in one at a time, as an upload through ``serve`` does: each stored
        and queued under its name (``names``, default its file name), recorded as coming from
        ``upload``, converted with ``settings`` of its own over the bucket's when given
        (``DocumentSettings(force_ocr=True)``). SourceError, before anything is stored, for a
        file that is missing, empty or of a type no digester takes. (Without bucket
        credentials, send them to a server: :func:`bucketdigest.runner.remote.upload_files`.)"""
        paths = [Path(f).expanduser() for f in files]
        chosen = list(names) if names is not None else [p.name for p in paths]
        if len(chosen) != len(paths):
            raise SourceError(f"{len(chosen)} names for {len(paths)} files: give one per file")
        named = list(zip(chosen, paths, strict=True))
        return take_files(self.store, named, priority=priority, settings=settings)

    @staticmethod
    def _source(source: str | Path) -> str:
        """A source as ``ingest`` takes it: ``~`` expanded; SourceError for a local path that
        does not exist (a URL or a Git remote is left to the ingest to reach)."""
        text = str(source)
        if "://" in text or text.startswith("git@"):
            return text
        path = Path(text).expanduser()
        if not path.exists():
            raise SourceError(f"{path}: no such file or folder")
        return str(path)

    @staticmethod
    def _ingest_settings(ext: str | None, settings: IngestSettings | None) -> IngestSettings:
        chosen = settings or IngestSettings()
        if ext is None:
            return chosen
        exts = expand_extensions(ext.split(","))
        return replace(chosen, file_filter=replace(chosen.file_filter, exts=exts))

    def work(self, settings: WorkerSettings | None = None) -> WorkerSummary:
        """Run one worker in this process until the queue is empty (``settings``: how), as
        ``bucketdigest work --exit-when-idle`` does: with its monitor duty, so expired leases
        are swept and what it finished is indexed before it returns."""
        chosen = replace(settings or WorkerSettings(), exit_when_idle=True)
        return work_bucket(self.store_settings, chosen)[0]

    def run(
        self,
        *sources: str | Path,
        ext: str | None = None,
        workers: int = 2,
        ingest: IngestSettings | None = None,
        settings: WorkerSettings | None = None,
    ) -> RunReport:
        """Ingest ``sources`` and digest them with ``workers`` local worker processes until
        every one is done or failed, then index (``bucketdigest run``)."""
        return run_local(
            self.store_settings,
            [self._source(s) for s in sources],
            self._ingest_settings(ext, ingest),
            workers,
            settings or WorkerSettings(),
        )

    def retry(self, *hashes: str) -> tuple[list[str], dict[str, str]]:
        """Put failed documents (every one when no hash is given) back in line with their
        attempts reset: the requeued, and why the others cannot be (``bucketdigest retry``)."""
        return retry_documents(self.store, list(hashes) or None, default_cache_dir())

    def reprocess(
        self, *hashes: str, digester: str | None = None, outdated: bool = False
    ) -> ReprocessReport:
        """Run ``digester`` (and what it resets) and/or every ``outdated`` one again on done
        documents; with neither, the whole chain from the source (``bucketdigest reprocess``)."""
        if digester is None and not outdated:
            digester = DIGESTERS[0]
        return reprocess_documents(
            self.store, list(hashes), digester, outdated, default_cache_dir()
        )

    def prioritize(self, *hashes: str, priority: Priority | str) -> tuple[list[str], list[str]]:
        """Move waiting documents to ``priority``'s lane: (moved, not waiting)."""
        chosen = [self.find(h) for h in hashes]
        return prioritize(self.store, chosen, Priority(priority))

    def purge(
        self,
        *,
        older_than: timedelta = timedelta(days=7),
        superseded: bool = False,
        dry_run: bool = False,
    ) -> Removal:
        """Remove what only removed paths still reference (``bucketdigest purge``)."""
        return purge_bucket(
            self.store_settings,
            PurgeRule(older_than=older_than, superseded=superseded),
            dry_run=dry_run,
        )

    def remove(self, path_or_hash: str) -> Removal:
        """Remove one document and everything of it (``bucketdigest rm``)."""
        return remove(self.store_settings, path_or_hash)

    def monitor(self) -> MonitorPass:
        """One monitor pass (``bucketdigest monitor --once``): expired leases, the consistency
        sweep, a damage check and the inbox taken in."""
        passes: list[MonitorPass] = []
        run_monitor(
            self.store, MonitorSettings(), once=True, on_pass=passes.append, take_in=take_inbox
        )
        return passes[0]

    def index(self, *, rebuild: bool = False) -> IndexReport:
        """Bring the search index up to date with the results (or build it anew)."""
        return index_bucket(self.store, self.store_settings, rebuild=rebuild)

    @property
    def settings(self) -> BucketSettings:
        """The bucket's settings, which every worker and monitor follows (``config show``)."""
        return read_settings(self.store)[0]

    def stored_settings(self) -> BucketSettings:
        """The settings as the bucket holds them, a value its setting refuses included: what
        ``config edit`` starts from, so that it can mend one."""
        return stored_settings(self.store)[0]

    def configure(self, **changes: Any) -> BucketSettings:
        """Set settings for the whole fleet (``max_attempts=5``; None unsets one), as a new
        version; Conflict when someone changed them meanwhile (``config set``)."""
        return change_settings(self.store, changes)

    def configure_text(self, **changes: str) -> BucketSettings:
        """:meth:`configure` with values as a person types them (``"5"``, ``"true"``)."""
        return self.configure(**{name: parsed(name, text) for name, text in changes.items()})

    def events_secret(self) -> str | None:
        """The secret events are signed with now (an admin's read)."""
        return current_events_secret(self.store)

    def replace_settings(self, text: str) -> BucketSettings:
        """Every setting from JSON text (``config edit``); those left out are unset."""
        return replace_settings(self.store, text)

    def add_token(
        self, name: str, scopes: tuple[Scope, ...] = (Scope.WORK,), workers: int = DEFAULT_WORKERS
    ) -> tuple[str, AccessToken]:
        """A token with ``scopes`` (``tokens add``: a worker's without bucket credentials by
        default, or a reader's, a writer's, an uploader's): the token, shown once, and its
        record."""
        return add_token(self.store, name, scopes, workers)

    def tokens(self) -> list[AccessToken]:
        """Every token, live or revoked (``tokens ls``)."""
        return list_tokens(self.store)

    def revoke_token(self, name_or_id: str) -> AccessToken:
        """Revoke a token at once (``tokens revoke``)."""
        return revoke_token(self.store, name_or_id)

    def check(self) -> RepairReport:
        """Check every result, source and marker for damage and repair what can be
        (``bucketdigest check``)."""
        return repair_bucket(self.store, default_cache_dir())

    @cached_property
    def index_copy(self) -> IndexCache | None:
        """The local copy of an S3 bucket's index (None: a local bucket, or copies off)."""
        return open_cache(self.store_settings, self.index_cache)

    def searcher(self) -> Searcher:
        """A searcher kept by the caller for many queries (reads the index's local copy for an
        S3 bucket, brought up to date first)."""
        return Searcher.open(self.store_settings, self.index_copy)

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """Answer a search request built by the caller (``bucketdigest search``)."""
        return self.searcher().search(request)

    def search(
        self,
        query: str,
        *,
        documents: bool = False,
        mode: Mode | str = Mode.HYBRID,
        limit: int = 10,
        **filters: Any,
    ) -> list[Hit]:
        """The best passages (or with ``documents`` whole documents) for ``query``; filters:
        ``source``, ``path``, ``file_type``, ``tag``."""
        level = Level.DOCUMENTS if documents else Level.CHUNKS
        request = SearchRequest(query, level, Mode(mode), limit, **filters)
        return self.searcher().search(request)

    def passages(
        self, query: str, *, mode: Mode | str = Mode.HYBRID, limit: int = 10, **filters: Any
    ) -> list[Passage]:
        """The best passages for ``query``, whole: their text, blocks and regions on the page
        (what a RAG pipeline feeds a model and cites); filters as :meth:`search`."""
        hits = self.search(query, mode=mode, limit=limit, **filters)
        return passages(self.store, hits, query)

    def located(self, hits: list[Hit], query: str) -> list[Hit]:
        """``hits`` with the regions on its page of each passage's blocks that answer
        ``query``, and of the whole passage (the index does not hold them: each document's
        result is read once)."""
        return [p.hit for p in passages(self.store, hits, query)]

    def chunks(self, path_or_hash: str) -> list[dict[str, Any]]:
        """A done document's chunks, each with its page, headings, text, blocks and regions."""
        return read_chunks(self.store, self.find(path_or_hash))

    def status(self) -> Status:
        """Counts per state, the last hour's rate, recent failures and ingest runs."""
        return collect_status(self.store)

    def overview(self) -> Overview:
        """The status with the search index's size and how far it is behind."""
        return overview(self.store, self.store_settings)

    def files(
        self, source: str | None = None, *, all_revisions: bool = False
    ) -> list[CatalogEntry]:
        """Every ingested (source, path) with its document and state."""
        return list_files(
            self.store_settings, source, all_revisions=all_revisions, store=self.store
        )

    def find(self, path_or_hash: str) -> str:
        """The hash of the document at an ingested path (exact, or a unique suffix)."""
        return find_digest(self.store_settings, path_or_hash, self.store)

    def get(self, path_or_hash: str, dest: Path | None = None) -> tuple[str, Path, list[str]]:
        """Unpack a done document's result into ``dest`` (default: a folder in the current
        one named after its file); its hash, the folder and the members written."""
        return get_result(self.store_settings, path_or_hash, dest, self.store)

    def docling(self, path_or_hash: str) -> DoclingDocument:
        """A done document as a DoclingDocument (docling-core's model), made from its
        ``document.json`` (``bucketdigest get --format docling``)."""
        from bucketdigest.shared.docling_document import docling_document  # docling-core: 0.5 s

        with self.result(path_or_hash) as result:
            names = result.info().get("names") or ["document"]
            return docling_document(result.json(DOCUMENT_STRUCTURE, {}), str(names[0]))

    def save_docling(self, path_or_hash: str, dest: Path | None = None) -> Path:
        """Write a done document's DoclingDocument to ``document.docling.json`` in ``dest``
        (default: the folder ``get`` unpacks into); the file written."""
        digest = self.find(path_or_hash)
        folder = dest if dest is not None else default_destination(self.store, digest)
        folder.mkdir(parents=True, exist_ok=True)
        written = folder / "document.docling.json"
        written.write_text(self.docling(digest).model_dump_json(indent=1), encoding="utf-8")
        return written

    def result(self, path_or_hash: str) -> ResultZip:
        """A done document's result zip, by ingested path or hash (NotFound if not done)."""
        digest = self.find(path_or_hash)
        data = self.store.get(keys.out_key(digest)).data
        reason = damage(data)
        if reason is not None:
            raise DamagedResult(digest, reason)
        return ResultZip(data)
