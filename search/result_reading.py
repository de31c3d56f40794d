"""Reading result zips for the indexer: downloads in threads (they wait on the network), a
part ahead of the parsing, which stays on the caller's thread: it is Python (about a thousand
documents a second), and more threads parsing only contend for the GIL. Parsing in processes
was slower still (7.5 s against 5 s for 2,000 documents: the rows cross a pipe)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from bucketdigest.shared.errors import BucketdigestError, NotFound
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.result import ZIP_DAMAGE
from bucketdigest.shared.store import ObjectInfo, Store

if TYPE_CHECKING:
    from bucketdigest.search.rows import DocumentRows

FETCH_THREADS = 8
IN_MEMORY_UP_TO = 4 << 20
"""Results up to this size are read into memory (most: a zip's images make the large ones);
writing, reading back and removing a file cost a third of reading a small result."""
Fetched = tuple[bytes | Path, str]
Download = Future["Fetched | str"]


def _download(store: Store, result: ObjectInfo, scratch: Path) -> Fetched | str:
    """A result's bytes (a file in ``scratch`` when large) and its ETag, or why it could
    not be read."""
    try:
        if result.size <= IN_MEMORY_UP_TO:
            read = store.get(result.key)
            return read.data, read.etag
        archive = scratch / Path(result.key).name
        return archive, store.download(result.key, archive).etag
    except NotFound:
        return "its result is gone"
    except (BucketdigestError, OSError) as exc:
        return f"unreadable result: {exc}"


def read_one(
    fetched: Fetched | str, digest: str, origins: list[SourceRecord]
) -> DocumentRows | str:
    """The rows of one downloaded document (its copy removed), or why they could not be read."""
    from bucketdigest.search.rows import rows_from_result

    if isinstance(fetched, str):
        return fetched
    archive, etag = fetched
    try:
        return rows_from_result(archive, digest, etag, origins)
    except ZIP_DAMAGE as exc:
        return f"result damaged (reprocess it): {exc}"
    except (BucketdigestError, OSError, ValueError, KeyError) as exc:
        return f"unreadable result: {exc}"
    finally:
        if isinstance(archive, Path):
            archive.unlink(missing_ok=True)


def read_results(
    store: Store, parts: list[list[str]], results: dict[str, ObjectInfo], scratch: Path
) -> Iterator[tuple[list[str], list[Download]]]:
    """Each part of the documents to index with its downloads, the next part's already
    under way; :func:`read_one` each."""
    with ThreadPoolExecutor(FETCH_THREADS) as fetchers:

        def start(part: list[str]) -> list[Download]:
            return [fetchers.submit(_download, store, results[digest], scratch) for digest in part]

        upcoming = start(parts[0]) if parts else []
        for n, part in enumerate(parts):
            current, upcoming = upcoming, start(parts[n + 1]) if n + 1 < len(parts) else []
            yield part, current
