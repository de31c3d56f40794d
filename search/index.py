"""The index's two tables, ``chunks`` (one row per search chunk) and ``documents`` (one row per
document), and opening, checking and maintaining them.

Both tables carry in their schema metadata the embedding model their vectors come from; an
index built with another model is refused, since its vectors and a query's would not compare.
Writes and maintenance go through ``lancedb``; searches read the same tables with ``pylance``
(the Lance format's own package, which imports in a tenth of the time). The two are pinned to
one Lance core version in pyproject.toml. Every write is a LanceDB commit, itself a conditional
write: a commit lands whole or not at all, so a killed indexer leaves the index as of its last
commit.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from bucketdigest.search.generation import CHUNKS, DOCUMENTS, table_names
from bucketdigest.search.location import IndexLocation
from bucketdigest.shared import keys
from bucketdigest.shared.embedding import DIMENSION, MODEL_NAME
from bucketdigest.shared.errors import IndexDamaged, IndexMismatch, IndexNotFound
from bucketdigest.shared.word_embedding import WORD_DIMENSION

if TYPE_CHECKING:
    import pyarrow as pa

    from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

SCHEMA_VERSION = "4"
"""2: ``terms``, the text as the full-text index tokenizes it (:mod:`.terms`); 3: a chunk's
``terms`` lead with its headings, and its ``fingerprint`` finds the same passage elsewhere;
4: a chunk's :data:`WORD_VECTOR`."""
_MODEL_KEY = b"bucketdigest.embedding_model"
_SCHEMA_KEY = b"bucketdigest.schema_version"
REBUILD_HINT = "run `bucketdigest index --rebuild`"
TERMS = "terms"
"""The column the full-text index covers (:func:`.terms.index_terms` of what a chunk is
matched by: :func:`.terms.matched_text`)."""
FULL_TEXT_INDEX = f"{TERMS}_idx"
WORD_VECTOR = "word_vector"
"""A chunk's static word vector (:mod:`bucketdigest.shared.word_embedding`), of its headings
and text: hybrid search's second reading of meaning (:data:`.fusion.WORD_WEIGHT`)."""

VECTOR_INDEX_FROM = 20_000
"""From this many rows on, an IVF-SQ vector index (a brute-force scan of 100,000 rows takes
~300 ms here; IVF-SQ answers in ~4 ms and builds 15 times faster than IVF-PQ)."""
TRAINING_SAMPLES = 64
"""Vectors per partition its k-means learns from: 64 builds 100,000 rows' index in a third of
the time of Lance's 256 (1.0 s against 2.9), with the same top-10 recall (0.50 against 0.50 on
random vectors, the hardest case)."""
FILTER_INDEXES = {
    "file_type": "BITMAP",
    "tags": "LABEL_LIST",
    "locations": "NGRAM",
    "digest": "BTREE",
}
"""Indexes the search filters use (``--type``, ``--tag``, ``--source``/``--path``, "more from
this document"): without them a filtered query scans those columns of every row (35 ms at a
million chunks; 4 with)."""
COMPACT_FROM_FRAGMENTS = 24
"""Each commit adds a fragment: past this many, compact and bring the indexes up to date."""
MOST_INDEX_PARTS = 3
"""New rows go into an index as a part of its own (a delta), and a query asks every part: a
full-text query over a base and six deltas took 10-12 ms here against 5-7 over one. Past this
many parts, the deltas (never the base, the largest part) are merged with the new rows into
one: at 50,000 rows that took 0.2-0.4 s against 2.6 s for the whole index, so the parts stay
few until compaction rewrites them all."""


def _schema(*fields: pa.Field) -> pa.Schema:
    import pyarrow as pa

    shared = [
        pa.field("digest", pa.string(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("names", pa.list_(pa.string())),
        pa.field("sources", pa.list_(pa.string())),
        pa.field("locations", pa.string()),
        pa.field("file_type", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("text", pa.string()),
        pa.field("terms", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), DIMENSION)),
    ]
    metadata = {_MODEL_KEY: MODEL_NAME.encode(), _SCHEMA_KEY: SCHEMA_VERSION.encode()}
    return pa.schema([*shared, *fields], metadata=metadata)


@functools.cache
def chunk_schema() -> pa.Schema:
    """``text`` is the chunk's plain text; ``locations`` is ``source<TAB>path`` per line;
    ``fingerprint`` a SimHash of its text (:func:`.terms.fingerprint`); :data:`WORD_VECTOR`
    its word vector."""
    import pyarrow as pa

    return _schema(
        pa.field("fingerprint", pa.int64()),
        pa.field("id", pa.string(), nullable=False),
        pa.field("page", pa.int32()),
        pa.field("part", pa.int32()),
        pa.field("headings", pa.list_(pa.string())),
        pa.field(WORD_VECTOR, pa.list_(pa.float32(), WORD_DIMENSION)),
    )


@functools.cache
def document_schema() -> pa.Schema:
    """``text`` is title, names, tags and summary; ``vector`` the mean of the chunks' vectors;
    ``etag`` the result zip's, so a reprocessed document is noticed."""
    import pyarrow as pa

    return _schema(
        pa.field("etag", pa.string()),
        pa.field("summary", pa.string()),
        pa.field("pages", pa.int32()),
        pa.field("chunks", pa.int32()),
        pa.field("indexed_at", pa.timestamp("us", tz="UTC")),
    )


@dataclass(frozen=True)
class IndexStats:
    """How big the index is and when it last changed."""

    chunks: int
    documents: int
    updated_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        updated = self.updated_at.isoformat() if self.updated_at else None
        return {"documents": self.documents, "chunks": self.chunks, "updated_at": updated}


def lance_environment() -> None:
    """What comes before ``import lancedb``. Lance logs to stderr from Rust; only its errors
    are worth a person's attention. And lancedb's import skips the REST client it never uses
    here (:func:`_without_rest_client`)."""
    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCEDB_LOG", "error")
    _without_rest_client()


REST_CLIENT = "lance_namespace_urllib3_client"


def _without_rest_client() -> None:
    """Register :data:`REST_CLIENT` as a bare package, so that importing its ``models`` (which
    ``lancedb`` imports through ``lance_namespace``) does not run the package's ``__init__``.

    That ``__init__`` builds the client of a directory namespace served over HTTP: 366
    pydantic-validated methods, 2 of the 3.5 s ``import lancedb`` takes on our CI machine, paid
    by every process that indexes or maintains the index. bucketdigest opens tables by URI and
    never a namespace over HTTP, so only the models are needed (tested by importing lancedb
    and using the index in a fresh process). Nothing is done when the package is gone or
    already imported."""
    if REST_CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(REST_CLIENT)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = types.ModuleType(REST_CLIENT)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules[REST_CLIENT] = package


def check_metadata(metadata: dict[bytes, bytes] | None, name: str) -> None:
    """Refuse a table whose vectors come from another model or whose schema is another."""
    metadata = metadata or {}
    model = metadata.get(_MODEL_KEY, b"").decode()
    if model != MODEL_NAME:
        raise IndexMismatch(
            f"the index's {name} were embedded with {model or 'an unknown model'}, but this "
            f"bucketdigest embeds with {MODEL_NAME}: {REBUILD_HINT}"
        )
    version = metadata.get(_SCHEMA_KEY, b"").decode()
    if version != SCHEMA_VERSION:
        raise IndexMismatch(
            f"the index's {name} table has schema version {version or '?'}, this bucketdigest "
            f"writes version {SCHEMA_VERSION}: {REBUILD_HINT}"
        )


class SearchIndex:
    """The two tables of one bucket's index (of one generation: :mod:`.generation`)."""

    def __init__(self, db: Any, chunks: Any, documents: Any) -> None:
        self.db = db
        self.chunks = chunks
        self.documents = documents

    @classmethod
    def open(
        cls, location: IndexLocation, *, create: bool = False, generation: str = ""
    ) -> SearchIndex:
        """Open the index's tables of ``generation`` (creating empty ones with ``create``).
        Raises IndexNotFound, IndexMismatch or IndexDamaged, each naming what to do."""
        lance_environment()
        import lancedb

        names = table_names(generation)
        try:
            db = lancedb.connect(location.uri, storage_options=location.storage_options)
            present = set(db.list_tables().tables)
            if not set(names) <= present:
                if not create:
                    raise IndexNotFound(
                        f"no search index at {location.uri} yet: run `bucketdigest index`"
                    )
                for name, schema in zip(names, (chunk_schema(), document_schema()), strict=True):
                    if name not in present:
                        db.create_table(name, schema=schema, exist_ok=True)
            chunks, documents = (db.open_table(name) for name in names)
        except (IndexNotFound, IndexMismatch):
            raise
        except Exception as exc:
            raise IndexDamaged(
                f"the index at {location.uri} cannot be read ({exc}): {REBUILD_HINT}"
            ) from exc
        check_metadata(chunks.schema.metadata, CHUNKS)
        check_metadata(documents.schema.metadata, DOCUMENTS)
        return cls(db, chunks, documents)

    def stats(self) -> IndexStats:
        versions = self.documents.list_versions()
        updated = versions[-1]["timestamp"] if versions else None
        if updated is not None and updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        return IndexStats(self.chunks.count_rows(), self.documents.count_rows(), updated)

    @classmethod
    def describe(cls, location: IndexLocation, generation: str = "") -> IndexStats | None:
        """The index's size and age, or None when there is none yet (``status``)."""
        try:
            return cls.open(location, generation=generation).stats()
        except IndexNotFound:
            return None

    def missing_files(self, store: Store) -> list[str]:
        """The keys the tables' current versions name that the bucket lacks (data, deletion
        and index files lost to a hand edit or a partial copy), from a listing of those three
        folders of each table (the transaction and version logs are left out: they grow)."""
        missing = []
        for table in (self.chunks, self.documents):
            prefix = keys.index_table_prefix(table.name)
            present = {
                info.key[len(prefix) :]
                for folder in ("data/", "_deletions/", "_indices/")
                for info in store.list(prefix + folder)
            }
            dataset = table.to_lance()
            named = set()
            for fragment in dataset.get_fragments():
                named |= {f"data/{data.path}" for data in fragment.data_files()}
                if (deletions := fragment.deletion_file()) is not None:
                    named.add(deletions)
            missing += [prefix + name for name in sorted(named - present)]
            for index in dataset.describe_indices():
                for segment in index.segments:
                    folder = f"_indices/{segment.uuid}/"
                    if not any(name.startswith(folder) for name in present):
                        missing.append(prefix + folder)
        return missing

    def maintain(self, force: bool = False) -> list[str]:
        """Create the indexes a table lacks, fold rows added since into the indexes it has,
        and compact tables with many fragments; returns what was done. Cheap when nothing is
        due. After it, every index covers every row: workers add a fragment per commit, and
        rows no index covers would be scanned on every query. The two tables are maintained
        at once (Lance builds indexes without the GIL; a rebuild's ends a fifth sooner)."""
        with ThreadPoolExecutor(1) as other:
            documents = other.submit(_maintain_table, DOCUMENTS, self.documents, force)
            done = _maintain_table(CHUNKS, self.chunks, force)
            return done + documents.result()


def _maintain_table(name: str, table: Any, force: bool) -> list[str]:
    """:meth:`SearchIndex.maintain` for one table."""
    from lancedb.index import FTS, IvfSq

    rows = table.count_rows()
    if rows == 0:
        return []
    indexes = {config.name for config in table.list_indices()}
    stale = sum(unindexed_rows(table, index) for index in indexes)
    missing: dict[str, Callable[[], object]] = {}
    if FULL_TEXT_INDEX not in indexes:
        missing[f"{name}: full-text index"] = partial(
            table.create_index, TERMS, config=FTS(with_position=True)
        )
    for column, kind in FILTER_INDEXES.items():
        if f"{column}_idx" not in indexes:
            missing[f"{name}: {kind.lower()} index on {column}"] = partial(
                table.to_lance().create_scalar_index, column, kind
            )
    if rows >= VECTOR_INDEX_FROM and "vector_idx" not in indexes:
        partitions = max(8, int(rows**0.5) // 4)
        config = IvfSq(
            distance_type="cosine", num_partitions=partitions, sample_rate=TRAINING_SAMPLES
        )
        missing[f"{name}: vector index"] = partial(table.create_index, "vector", config=config)
    with ThreadPoolExecutor(max(1, len(missing))) as builders:  # Lance builds without the GIL
        for build in [builders.submit(create) for create in missing.values()]:
            build.result()
    done = list(missing)
    fragments = table.stats()["fragment_stats"]["num_fragments"]
    if force or fragments > COMPACT_FROM_FRAGMENTS:
        table.optimize(cleanup_older_than=timedelta(hours=1))
        done.append(f"{name}: compacted {fragments} fragments")
    elif stale:
        lance_table = table.to_lance()
        for index in sorted(indexes):
            stats = table.index_stats(index)
            parts = int(stats.num_indices or 1) if stats is not None else 1
            merged = parts - 1 if parts + 1 > MOST_INDEX_PARTS else 0
            lance_table.optimize.optimize_indices(index_names=[index], num_indices_to_merge=merged)
        done.append(f"{name}: {stale} new rows indexed")
    return done


def unindexed_rows(table: Any, index: str) -> int:
    """Rows of ``table`` that ``index`` does not cover yet (a query scans them)."""
    stats = table.index_stats(index)
    return int(stats.num_unindexed_rows) if stats is not None else 0
