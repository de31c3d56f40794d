"""The local copy of an S3 bucket's index: searches read it, it follows the bucket's new
versions, and a damaged, stale or oversized copy is never trusted over the bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from bucketdigest.search import cache as index_cache
from bucketdigest.search.cache import IndexCache, IndexCacheSettings, manifest_version, open_cache
from bucketdigest.search.index import CHUNKS, DOCUMENTS
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.stores.local import LocalStore
from tests.search.conftest import digest_folder

TABLES = (CHUNKS, DOCUMENTS)


@pytest.fixture
def indexed(
    moto_bucket: str, moto_endpoint: str, topics_bucket: tuple[Path, dict[str, str]]
) -> StoreSettings:
    """A bucket on moto's server holding the topics, digested (the run's topics bucket, copied
    object by object) and indexed."""
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    store, digested = open_store(settings), LocalStore(topics_bucket[0])
    for stored in digested.list(""):
        store.put(stored.key, digested.get(stored.key).data)
    index_bucket(store, settings)
    return settings


def _names(searcher: Searcher, query: str) -> list[tuple[str, ...]]:
    return [hit.names for hit in searcher.search(SearchRequest(query, mode=Mode.KEYWORD))]


def _cache(settings: StoreSettings, folder: Path, **options: int) -> IndexCache:
    return IndexCache(open_store(settings), folder, check_every=0, **options)


def test_searches_from_the_copy_answer_as_the_bucket_does(
    indexed: StoreSettings, tmp_path: Path
) -> None:
    cache = _cache(indexed, tmp_path / "copy")
    from_copy = Searcher.open(indexed, cache)
    assert Path(from_copy.chunks.uri).is_relative_to(tmp_path / "copy")
    direct = Searcher.open(indexed)
    for query in ("boarding the enemy ship", "wrestling holds", "barley harvest"):
        assert _names(from_copy, query) == _names(direct, query) != []
    again = cache.sync(TABLES)
    assert again.downloaded == 0, "an unchanged index is not copied twice"


def test_the_copy_follows_new_versions_of_the_index(indexed: StoreSettings, tmp_path: Path) -> None:
    cache = _cache(indexed, tmp_path / "copy")
    assert _names(Searcher.open(indexed, cache), "lighthouse") == []
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "coast.md").write_text(
        "# Coasts\n\nThe lighthouse keeper trims the lamp wick every night.\n"
    )
    store = open_store(indexed)
    digest_folder(store, tmp_path / "more")
    index_bucket(store, indexed)
    report = cache.sync(TABLES)
    assert report.downloaded > 0
    assert _names(Searcher.open(indexed, cache), "lighthouse") == [("coast.md",)]


def test_a_damaged_copy_is_taken_anew_from_the_bucket(
    indexed: StoreSettings, tmp_path: Path
) -> None:
    cache = _cache(indexed, tmp_path / "copy")
    Searcher.open(indexed, cache)
    manifests = list((tmp_path / "copy" / "chunks.lance" / "_versions").glob("*.manifest"))
    assert len(manifests) == 1
    manifests[0].write_bytes(b"\0" * manifests[0].stat().st_size)
    searcher = Searcher.open(indexed, cache)  # the bucket answers meanwhile
    assert _names(searcher, "wrestling holds")[0] == ("melee/grappling.md",)
    healed = Searcher.open(indexed, cache)
    assert Path(healed.chunks.uri).is_relative_to(tmp_path / "copy")
    assert _names(healed, "wrestling holds")[0] == ("melee/grappling.md",)


def test_a_copy_cut_short_is_mended_when_a_process_first_uses_it(
    indexed: StoreSettings, tmp_path: Path
) -> None:
    _cache(indexed, tmp_path / "copy").sync(TABLES)
    data = next((tmp_path / "copy" / "documents.lance" / "data").glob("*.lance"))
    whole = data.read_bytes()
    data.write_bytes(whole[:100])
    later = _cache(indexed, tmp_path / "copy")  # another process, or the same one restarted
    assert later.sync(TABLES).downloaded == 1
    assert data.read_bytes() == whole


def test_an_index_larger_than_the_cache_is_searched_in_the_bucket(
    indexed: StoreSettings, tmp_path: Path
) -> None:
    cache = _cache(indexed, tmp_path / "copy", max_bytes=1000)
    searcher = Searcher.open(indexed, cache)
    assert searcher.chunks.uri.startswith("s3://")
    assert _names(searcher, "wrestling holds")[0] == ("melee/grappling.md",)
    assert not list((tmp_path / "copy").glob("*.lance/data/*"))


def test_files_the_bucket_dropped_leave_the_copy_after_a_grace(
    indexed: StoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache(indexed, tmp_path / "copy")
    cache.sync(TABLES)
    orphan = tmp_path / "copy" / "chunks.lance" / "data" / "gone.lance"
    orphan.write_bytes(b"x")
    store = open_store(indexed)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "x.md").write_text("# X\n\nSomething new to index.\n")
    digest_folder(store, tmp_path / "more")
    index_bucket(store, indexed)
    cache.sync(TABLES)
    assert orphan.is_file(), "a reader of the older version may still need it"
    monkeypatch.setattr(index_cache, "GRACE_SECONDS", -1.0)
    (tmp_path / "more" / "y.md").write_text("# Y\n\nA new version of the index.\n")
    digest_folder(store, tmp_path / "more")
    index_bucket(store, indexed)
    cache.sync(TABLES)
    assert not orphan.exists()


def test_local_buckets_and_no_index_cache_read_the_index_in_place(tmp_path: Path) -> None:
    assert open_cache(StoreSettings(bucket=str(tmp_path)), IndexCacheSettings()) is None
    s3 = StoreSettings(bucket="s3://somewhere/x", endpoint_url="http://127.0.0.1:9")
    assert open_cache(s3, IndexCacheSettings(enabled=False)) is None


def test_manifest_names_of_both_lance_schemes_give_their_version() -> None:
    assert manifest_version("18446744073709551614.manifest") == 1
    assert manifest_version("18446744073709551612.manifest") == 3
    assert manifest_version("7.manifest") == 7
    assert manifest_version("latest_version_hint.json") is None
