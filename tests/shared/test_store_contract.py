"""One contract, every Store: LocalStore, S3Store on moto in-process and on moto's server."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bucketdigest.shared.errors import InvalidKey, NotFound
from bucketdigest.shared.selftest import check_conditional_writes
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore


def test_get_returns_what_put_wrote_with_its_etag(store: Store) -> None:
    etag = store.put("a/b.json", b"hello")
    got = store.get("a/b.json")
    assert got.data == b"hello"
    assert got.etag == etag


def test_get_of_a_missing_key_raises_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.get("missing/key")


def test_head_tells_size_or_none(store: Store) -> None:
    store.put("k", b"12345")
    info = store.head("k")
    assert info is not None and info.size == 5 and info.key == "k"
    assert store.head("nope") is None


def test_put_if_absent_creates_once_and_then_refuses(store: Store) -> None:
    assert store.put_if_absent("q/x", b"first") is not None
    assert store.put_if_absent("q/x", b"second") is None
    assert store.get("q/x").data == b"first"


def test_put_if_absent_accepts_a_file(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "f.bin"
    source.write_bytes(b"\x00" * 3000)
    assert store.put_if_absent("raw/f.bin", source) is not None
    assert store.get("raw/f.bin").data == b"\x00" * 3000


def test_put_if_match_replaces_only_the_expected_version(store: Store) -> None:
    first = store.put("m", b"v1")
    second = store.put_if_match("m", b"v2", first)
    assert second is not None and second != first
    assert store.put_if_match("m", b"v3", first) is None
    assert store.get("m").data == b"v2"


def test_put_if_match_on_a_deleted_key_is_refused(store: Store) -> None:
    etag = store.put("gone", b"v1")
    store.delete("gone")
    assert store.put_if_match("gone", b"v2", etag) is None
    assert store.head("gone") is None


def test_conditional_delete_removes_only_the_expected_version(store: Store) -> None:
    first = store.put("d", b"v1")
    store.put("d", b"v2")
    assert store.delete("d", if_match=first) is False
    assert store.get("d").data == b"v2"
    assert store.delete("d", if_match=store.get("d").etag) is True
    assert store.head("d") is None


def test_unconditional_delete_of_a_missing_key_succeeds(store: Store) -> None:
    assert store.delete("never/was") is True


def test_list_is_lexicographic_paged_and_respects_start_after(store: Store) -> None:
    names = [f"queue/todo/{i:03d}" for i in range(25)] + ["queue/todo-x", "queue/tod"]
    for name in names:
        store.put(name, b"")
    listed = [info.key for info in store.list("queue/todo/")]
    assert listed == sorted(n for n in names if n.startswith("queue/todo/"))
    after = [info.key for info in store.list("queue/todo/", start_after="queue/todo/010", limit=3)]
    assert after == ["queue/todo/011", "queue/todo/012", "queue/todo/013"]
    assert [i.key for i in store.list("queue/todo-")] == ["queue/todo-x"]


def test_list_orders_keys_as_s3_does_across_folders(store: Store) -> None:
    for name in ("p/a/b", "p/a-c", "p/a0"):
        store.put(name, b"")
    assert [info.key for info in store.list("p/")] == ["p/a-c", "p/a/b", "p/a0"]


def test_modified_times_are_those_list_gives_for_the_same_prefix(store: Store) -> None:
    for name in ("out/a.zip", "out/b/c.zip", "outer/d.zip", "out-e.zip", "other/f.zip"):
        store.put(name, b"PK")
    for prefix in ("out/", "out", "o", "out/b/", "none/"):
        listed = sorted(info.last_modified.timestamp() for info in store.list(prefix))
        assert sorted(store.modified_times(prefix)) == pytest.approx(listed)
    assert len(list(store.modified_times("out/"))) == 2


def test_keys_with_spaces_and_unicode_round_trip(store: Store) -> None:
    key = "registry/docs/Règles du jeu [v2], final.json"
    store.put(key, b"{}")
    assert [info.key for info in store.list("registry/docs/")] == [key]


def test_store_clock_is_close_to_real_time(store: Store) -> None:
    store.put("tick", b"")
    assert abs(store.now() - datetime.now(UTC)) < timedelta(seconds=5)


def test_self_test_passes_and_detects_conditional_delete(store: Store) -> None:
    check_conditional_writes(store)
    assert store.supports_conditional_delete is True
    assert list(store.list("selftest/")) == []


@pytest.mark.parametrize(
    "key",
    ["../escape", "/abs", "a/../../b", "a\\b", "nul\0", "a//b", "", ".bucketdigest-local/x", "a/"],
)
def test_local_store_refuses_keys_that_could_escape_its_root(tmp_path: Path, key: str) -> None:
    local = LocalStore(tmp_path / "root")
    with pytest.raises(InvalidKey):
        local.put(key, b"x")


def test_delete_many_removes_every_key_named_and_ignores_missing_ones(store: Store) -> None:
    for name in ("w/h/a", "w/h/b", "w/h/c", "w/keep"):
        store.put(name, b"x")
    store.delete_many(["w/h/a", "w/h/b", "w/h/c", "w/h/never-written"])
    assert [info.key for info in store.list("w/")] == ["w/keep"]
    store.delete_many([])


def test_local_store_objects_get_the_mode_the_umask_gives(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        local = LocalStore(tmp_path / "root")
        local.put("a/plain", b"x")
        local.put_if_absent("a/created", b"x")
        etag = local.put("a/replaced", b"x")
        local.put_if_match("a/replaced", b"y", etag)
    finally:
        os.umask(previous)
    for name in ("plain", "created", "replaced"):
        assert stat.S_IMODE((tmp_path / "root" / "a" / name).stat().st_mode) == 0o644
