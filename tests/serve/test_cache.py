"""Result zips are fetched once and then read from a bounded cache, revalidated by ETag."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

from bucketdigest.serve.results import CacheSettings, NoResult, NoSuchMember, ResultCache
from bucketdigest.shared import keys
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore

DIGEST = "cd" * 32


def _zip(**members: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_many_reads_of_one_result_cost_one_download(tmp_path: Path) -> None:
    store = CountingStore(LocalStore(tmp_path / "bucket"))
    store.put(keys.out_key(DIGEST), _zip(**{"info.json": b"{}", "pages/0001.md": b"# One"}))
    cache = ResultCache(store, CacheSettings(directory=tmp_path / "cache"))
    for _ in range(20):
        assert cache.member(DIGEST, "pages/0001.md") == b"# One"
    assert store.requests["GET"] == 1
    assert store.requests["HEAD"] == 1
    cache.close()


def test_a_reprocessed_result_is_seen_after_revalidation(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    store.put(keys.out_key(DIGEST), _zip(**{"summary.md": b"old"}))
    cache = ResultCache(store, CacheSettings(revalidate_seconds=0))
    assert cache.member(DIGEST, "summary.md") == b"old"
    store.put(keys.out_key(DIGEST), _zip(**{"summary.md": b"new and longer"}))
    assert cache.member(DIGEST, "summary.md") == b"new and longer"
    cache.close()


def test_the_disk_cache_stays_within_its_limit(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    noise = bytes(range(256)) * 400  # 100 KiB that does not compress away
    digests = [f"{n:064x}" for n in range(12)]
    for digest in digests:
        store.put(keys.out_key(digest), _zip(**{"blob.bin": noise + digest.encode()}))
    cache = ResultCache(store, CacheSettings(directory=tmp_path / "cache", max_bytes=400_000))
    for digest in digests:
        assert cache.member(digest, "blob.bin").endswith(digest.encode())
    cached = sum(f.stat().st_size for f in (tmp_path / "cache").rglob("*.val"))
    assert 0 < cached <= 400_000 + 2 * len(noise)
    assert cache.member(digests[0], "blob.bin").endswith(digests[0].encode())
    cache.close()


def test_missing_results_and_members_are_named(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    store.put(keys.out_key(DIGEST), _zip(**{"info.json": b"{}"}))
    cache = ResultCache(store, CacheSettings())
    with pytest.raises(NoResult, match="ab" * 32):
        cache.names("ab" * 32)
    with pytest.raises(NoSuchMember, match=re.escape("../../etc/passwd")):
        cache.member(DIGEST, "../../etc/passwd")
    cache.close()
