"""The damage check finds results, sources and markers that cannot be used, repairs what the
bucket holds the means to repair, lists the rest, and never deletes a source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bucketdigest.monitor import damage
from bucketdigest.monitor.damage import check_bucket, check_damage, damaged_objects
from bucketdigest.monitor.status import collect_status
from bucketdigest.runner.rerun import retry_documents
from bucketdigest.shared import keys, queue
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.result import ResultZip
from bucketdigest.shared.result import damage as zip_damage
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.search.conftest import digest_folder, write_topics


@pytest.fixture(scope="module")
def done_bucket(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("damage")
    write_topics(root / "in")
    return root / "bucket", root / "in", digest_folder(LocalStore(root / "bucket"), root / "in")


@pytest.fixture
def bucket(
    done_bucket: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> tuple[LocalStore, Path, dict[str, str]]:
    copy = tmp_path / "bucket"
    shutil.copytree(done_bucket[0], copy)
    return LocalStore(copy), done_bucket[1], done_bucket[2]


def _work(store: LocalStore) -> dict[str, int]:
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.05)
    return Worker(store, settings).run().outcomes


def test_a_damaged_result_is_made_again_from_its_source_and_drops_off_the_list(
    bucket: tuple[LocalStore, Path, dict[str, str]],
) -> None:
    store, _, digests = bucket
    cut, garbled = digests["magic/spells.md"], digests["world/harvest.md"]
    whole = store.get(keys.out_key(cut)).data
    store.put(keys.out_key(cut), whole[: len(whole) // 2])
    data = bytearray(store.get(keys.out_key(garbled)).data)
    data[40:60] = b"\xff" * 20  # inside the first member: its checksum fails, the zip opens
    store.put(keys.out_key(garbled), bytes(data))

    lap = check_bucket(store)

    assert lap.checked == len(digests)
    assert sorted(lap.remade) == sorted([cut, garbled])
    assert set(lap.found) == {keys.out_key(cut), keys.out_key(garbled)}
    assert "being made again" in lap.found[keys.out_key(cut)]
    listed = collect_status(store).damaged
    assert set(listed) == {keys.out_key(cut), keys.out_key(garbled)}
    assert _work(store) == {"done": 2}
    for digest in (cut, garbled):
        assert zip_damage(store.get(keys.out_key(digest)).data) is None
        with ResultZip(store.get(keys.out_key(digest)).data) as result:
            assert "# " in result.text("document.md")
    assert check_bucket(store).found == {}
    assert damaged_objects(store) == {}


def test_markers_that_do_not_parse_are_rebuilt_from_the_source(
    bucket: tuple[LocalStore, Path, dict[str, str]],
) -> None:
    store, _, digests = bucket
    waiting, dead = digests["naval/broadsides.md"], digests["melee/grappling.md"]
    for digest in (waiting, dead):
        store.delete(keys.out_key(digest))
    store.put(keys.queue_key(QueueState.TODO, waiting), b"{not json")
    store.put(keys.queue_key(QueueState.FAILED, dead), b"\x00\x01garbage")
    assert keys.queue_key(QueueState.FAILED, dead) in collect_status(store).damaged

    lap = check_bucket(store)

    assert sorted(lap.mended) == sorted(
        [keys.queue_key(QueueState.TODO, waiting), keys.queue_key(QueueState.FAILED, dead)]
    )
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, waiting)).data)
    assert ticket.names == ("naval/broadsides.md",), "named from the registry"
    assert queue.state_of(store, dead) is DocState.TODO
    assert _work(store) == {"done": 2}


def test_a_source_that_lost_its_hash_is_reported_failed_clearly_and_fetched_again_by_retry(
    bucket: tuple[LocalStore, Path, dict[str, str]], tmp_path: Path
) -> None:
    store, folder, digests = bucket
    digest = digests["world/dungeons.md"]
    raw = keys.raw_key(digest, "md")
    store.put(raw, b"# Dungeon Traps\n\nbit rot took this\n")
    store.delete(keys.out_key(digest))
    queue.enqueue(store, Ticket(digest, "md", 10, ("world/dungeons.md",), store.now()))

    lap = check_bucket(store)
    assert "another hash" in lap.found[raw] and store.head(raw) is not None, "never deleted"
    assert _work(store) == {"failed": 1}
    failure = queue.read_failure(store, digest)
    assert failure is not None and f"{raw} is damaged" in failure.error

    requeued, cannot = retry_documents(store, [digest[:10]], tmp_path / "cache")

    assert (requeued, cannot) == ([digest], {})
    assert (folder / "world/dungeons.md").read_bytes() == store.get(raw).data
    assert _work(store) == {"done": 1}


def test_a_check_stops_at_its_budget_and_the_next_goes_on_from_there(
    bucket: tuple[LocalStore, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, digests = bucket
    ordered = sorted(digests.values())
    first = check_damage(store, budget=1)
    assert first.checked == 1 and first.until < ordered[1]
    seen = first.checked
    while True:
        report = check_damage(store, budget=1)
        seen += report.checked
        if report.until == "f" * 64:
            break
    assert seen == len(ordered)
    monkeypatch.setattr(damage, "LISTED", 2)  # spans bounded by the listings, too
    assert check_bucket(store).checked == len(ordered)
