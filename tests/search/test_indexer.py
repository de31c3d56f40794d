"""Keeping the index current: idempotent, replaced on reprocess, emptied on removal, one
indexer at a time, and safe when killed, faulted, or run by many workers at once."""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import boto3
import numpy as np
import pytest

from bucketdigest.search import generation, lease
from bucketdigest.search.index import MOST_INDEX_PARTS, SearchIndex, unindexed_rows
from bucketdigest.search.indexer import catch_up, index_bucket
from bucketdigest.search.location import index_location
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.errors import IndexNotFound
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from bucketdigest.worker.reprocess import reprocess
from tests.clocks import MovableClock
from tests.documents import scanned_pdf
from tests.faultproxy import FaultProxy
from tests.search.conftest import TOPICS, digest_folder, write_topics
from tests.waiting import wait_until

CLI = [sys.executable, "-m", "bucketdigest"]


def _copy(topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path) -> tuple[Path, StoreSettings]:
    bucket = tmp_path / "bucket"
    shutil.copytree(topics_bucket[0], bucket)
    return bucket, StoreSettings(bucket=str(bucket))


def _chunk_ids(settings: StoreSettings) -> list[str]:
    return SearchIndex.open(index_location(settings)).chunks.to_arrow()["id"].to_pylist()


def _zip_chunk_count(store: LocalStore, digest: str) -> int:
    with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data)) as archive:
        return len(archive.read("chunks.jsonl").splitlines())


def test_indexing_twice_adds_nothing_and_every_chunk_is_there_once(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    first = index_bucket(store, settings)
    again = index_bucket(store, settings)
    assert (first.added, again.added, again.replaced, again.removed) == (5, 0, 0, 0)
    ids = _chunk_ids(settings)
    assert len(ids) == len(set(ids))
    assert len(ids) == sum(_zip_chunk_count(store, d) for d in topics_bucket[1].values())


def test_a_reprocessed_document_replaces_its_rows(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    digest = topics_bucket[1]["naval/broadsides.md"]
    index_bucket(store, settings)
    assert reprocess(store, [digest], "tags", outdated=False).requeued
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    report = index_bucket(store, settings)
    assert (report.added, report.replaced) == (0, 1)

    # a new result with one chunk fewer: the chunk it no longer has leaves the index
    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
    members = {name: archive.read(name) for name in archive.namelist()}
    chunks = members["chunks.jsonl"].decode().splitlines()
    dropped = json.loads(chunks[-1])["id"]
    members["chunks.jsonl"] = ("\n".join(chunks[:-1]) + "\n").encode()
    vectors = np.load(io.BytesIO(members["embeddings.npy"]))[:-1]
    buffer = io.BytesIO()
    np.save(buffer, vectors)
    members["embeddings.npy"] = buffer.getvalue()
    about = json.loads(members["embeddings.json"])
    about["chunk_ids"] = about["chunk_ids"][:-1]
    members["embeddings.json"] = json.dumps(about).encode()
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w") as out:
        for name, data in members.items():
            out.writestr(name, data)
    store.put(keys.out_key(digest), rewritten.getvalue())
    assert index_bucket(store, settings).replaced == 1
    ids = _chunk_ids(settings)
    assert dropped not in ids and len(ids) == len(set(ids))


def test_a_removed_result_leaves_the_index(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    index_bucket(store, settings)
    gone = topics_bucket[1]["magic/spells.md"]
    store.delete(keys.out_key(gone))
    assert index_bucket(store, settings).removed == 1
    hits = Searcher.open(settings).search(SearchRequest("wizard mana spellbook", limit=50))
    assert gone not in {h.digest for h in hits}


def test_a_damaged_result_is_skipped_with_its_reason_and_the_rest_indexed(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    damaged = topics_bucket[1]["magic/spells.md"]
    whole = store.get(keys.out_key(damaged)).data
    store.put(keys.out_key(damaged), whole[: len(whole) // 2])
    for rebuild in (False, True):
        report = index_bucket(store, settings, rebuild=rebuild)
        assert report.added == len(topics_bucket[1]) - 1
        assert list(report.skipped) == [damaged]
        assert report.skipped[damaged].startswith("result damaged (reprocess it):")
        searcher = Searcher.open(settings)
        hits = searcher.search(SearchRequest("threshes grain in the barn", mode=Mode.KEYWORD))
        assert [hit.digest for hit in hits][:1] == [topics_bucket[1]["world/harvest.md"]]
        hits = searcher.search(SearchRequest("wizard mana spellbook", limit=50))
        assert damaged not in {hit.digest for hit in hits}


def test_a_rebuild_is_made_beside_the_index_searches_read_until_it_is_complete(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    index_bucket(store, settings)
    harvest = topics_bucket[1]["world/harvest.md"]
    question = SearchRequest("threshes grain in the barn", mode=Mode.KEYWORD)
    real_switch = generation.switch
    seen_before_switch: list[list[str]] = []

    def switch_watched(store_: LocalStore, name: str) -> None:
        # the new tables are complete; searches still read the old ones until the switch
        assert SearchIndex.open(index_location(settings), generation=name).documents.count_rows()
        seen_before_switch.append([hit.digest for hit in Searcher.open(settings).search(question)])
        real_switch(store_, name)

    monkeypatch.setattr(generation, "switch", switch_watched)
    report = index_bucket(store, settings, rebuild=True)
    assert seen_before_switch and seen_before_switch[0][:1] == [harvest]
    assert any(line.startswith("switched searches") for line in report.maintenance)
    rebuilt = generation.current(store)
    assert rebuilt.current and rebuilt.previous == ""
    assert [hit.digest for hit in Searcher.open(settings).search(question)][:1] == [harvest]
    assert (bucket / "index" / "chunks.lance").is_dir(), "kept for searches still reading it"
    monkeypatch.setattr(generation, "DROP_AFTER", timedelta(seconds=-1))
    assert "dropped chunks" in index_bucket(store, settings).maintenance
    assert not (bucket / "index" / "chunks.lance").exists()
    assert [hit.digest for hit in Searcher.open(settings).search(question)][:1] == [harvest]


def test_documents_indexed_one_at_a_time_stay_covered_by_the_full_text_index(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Workers index a few documents per run, each run adding a fragment: every run folds its
    rows into the indexes (full text and filters), so no query scans unindexed rows (the
    bound: none after a run), and the parts an index is in stay few (a query asks each)."""
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    aside = tmp_path / "aside"
    aside.mkdir()
    digests = sorted(topics_bucket[1].values())
    for digest in digests:
        (aside / digest).write_bytes(store.get(keys.out_key(digest)).data)
        store.delete(keys.out_key(digest))
    for digest in digests:
        store.put(keys.out_key(digest), (aside / digest).read_bytes())
        assert index_bucket(store, settings).added == 1
        index = SearchIndex.open(index_location(settings))
        for table in (index.chunks, index.documents):
            names = sorted(i.name for i in table.list_indices())
            assert names == [
                "digest_idx",
                "file_type_idx",
                "locations_idx",
                "tags_idx",
                "terms_idx",
            ]
            assert [unindexed_rows(table, name) for name in names] == [0] * len(names)
            parts = [table.index_stats(name).num_indices for name in names]
            assert max(parts) <= MOST_INDEX_PARTS, dict(zip(names, parts, strict=True))
    hits = Searcher.open(settings).search(SearchRequest("thieves tools", mode=Mode.KEYWORD))
    assert hits[0].digest == topics_bucket[1]["world/dungeons.md"]


def test_a_second_indexer_does_not_write_while_the_first_holds_the_lease(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    held = lease.acquire(store, "someone-else", 600)
    assert isinstance(held, lease.HeldLease)
    report = index_bucket(store, settings)
    assert "someone-else is indexing" in report.busy
    with pytest.raises(IndexNotFound):
        SearchIndex.open(index_location(settings))
    lease.release(store, held, "done")
    assert index_bucket(store, settings).added == 5
    assert "moments ago" in index_bucket(store, settings, min_interval=3600).busy


KILLABLE = """
import sys, threading
from bucketdigest.search import indexer
from bucketdigest.shared.config import StoreSettings, open_store

indexer.BATCH_DOCUMENTS = 1
commit = indexer._commit
committed = []

def held_after_two(*args, **kw):
    done = commit(*args, **kw)
    committed.append(done)
    if len(committed) == 2:
        threading.Event().wait()  # held here, two batches in, until the test kills it
    return done

indexer._commit = held_after_two
settings = StoreSettings(bucket=sys.argv[1])
indexer.index_bucket(open_store(settings), settings, lease_seconds=600)
"""
LEASE_SECONDS_OF_THE_KILLED = 600


@pytest.mark.slow
def test_a_killed_indexer_leaves_a_usable_index_and_the_next_one_finishes(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    child = subprocess.Popen([sys.executable, "-c", KILLABLE, str(bucket)])
    location = index_location(settings)

    def indexed() -> int:
        try:
            return SearchIndex.open(location).documents.count_rows()
        except IndexNotFound:
            return 0

    def two_committed() -> bool:
        assert child.poll() is None, "the indexer ended before it could be killed"
        return indexed() >= 2

    wait_until(two_committed, "the indexer committed fewer than two batches", seconds=120)
    child.send_signal(signal.SIGKILL)
    child.wait()
    partial = indexed()
    assert 2 <= partial < 5, "the indexer finished before it could be killed"
    searcher = Searcher.open(settings)  # what was committed before the kill is searchable
    topics = ("ships cannon", "grapple wrestling", "wizard spells", "harvest wheat", "trap pit")
    assert sum(bool(searcher.search(SearchRequest(topic))) for topic in topics) == partial

    clock = MovableClock()
    clock.advance(LEASE_SECONDS_OF_THE_KILLED + 1)  # the dead indexer's lease is over
    report = index_bucket(LocalStore(bucket, clock=clock), settings)
    assert report.added == 5 - partial
    ids = _chunk_ids(settings)
    assert len(ids) == len(set(ids))


@pytest.mark.slow
def test_workers_keep_the_index_current_on_moto_without_duplicates(
    moto_bucket: str, moto_endpoint: str, tmp_path: Path
) -> None:
    write_topics(tmp_path / "in")
    target = ["--bucket", moto_bucket, "--endpoint-url", moto_endpoint]
    subprocess.run([*CLI, "ingest", str(tmp_path / "in"), "--ext", "md", *target], check=True)
    workers = [
        subprocess.Popen(
            [*CLI, "work", *target, "--exit-when-idle", "--monitor-every", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for worker in workers:
        _, errors = worker.communicate(timeout=300)
        assert worker.returncode == 0, errors
    settings = StoreSettings(bucket=moto_bucket, endpoint_url=moto_endpoint)
    # workers that leave for want of work index what they finished first
    assert SearchIndex.open(index_location(settings)).documents.count_rows() == 5
    caught_up = subprocess.run([*CLI, "index", *target], capture_output=True, text=True)
    assert caught_up.returncode == 0, caught_up.stderr
    assert "0 added" in caught_up.stdout + caught_up.stderr
    index = SearchIndex.open(index_location(settings))
    assert index.documents.count_rows() == 5
    ids = index.chunks.to_arrow()["id"].to_pylist()
    assert len(ids) == len(set(ids))
    found = subprocess.run(
        [*CLI, "search", "wrestling holds", *target, "--json", "--limit", "1"],
        capture_output=True,
        text=True,
    )
    assert json.loads(found.stdout)[0]["names"] == ["melee/grappling.md"]


@pytest.mark.slow
def test_store_faults_while_indexing_on_moto_leave_no_duplicate_or_partial_document(
    moto_endpoint: str, tmp_path: Path
) -> None:
    name = f"bd-faults-{time.time_ns() % 10**9}"
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=name)
    clean = StoreSettings(bucket=f"s3://{name}/data", endpoint_url=moto_endpoint)
    write_topics(tmp_path / "in")
    digests = digest_folder(open_store(clean), tmp_path / "in")
    with FaultProxy(moto_endpoint, rate=0.05, seed=7) as proxy:
        faulty = StoreSettings(bucket=clean.bucket, endpoint_url=proxy.url)
        try:
            index_bucket(open_store(faulty), faulty)
        except Exception as exc:  # a fault past every retry: the next run must repair it
            print(f"indexing under faults stopped: {exc}")
    assert proxy.injected
    index_bucket(open_store(clean), clean, wait=30)
    index = SearchIndex.open(index_location(clean))
    documents = index.documents.to_arrow()
    assert sorted(documents["digest"].to_pylist()) == sorted(digests.values())
    ids = index.chunks.to_arrow()["id"].to_pylist()
    assert len(ids) == len(set(ids))
    counts = {d: 0 for d in digests.values()}
    for chunk_id in ids:
        counts[chunk_id.split(":")[0]] += 1
    recorded = zip(documents["digest"].to_pylist(), documents["chunks"].to_pylist(), strict=True)
    assert dict(recorded) == counts


@pytest.mark.slow
def test_a_phrase_on_a_scanned_page_is_found_through_its_ocr_text(tmp_path: Path) -> None:
    scanned_pdf(tmp_path / "in" / "scan.pdf")
    store = LocalStore(tmp_path / "bucket")
    digests = digest_folder(store, tmp_path / "in")
    settings = StoreSettings(bucket=str(tmp_path / "bucket"))
    index_bucket(store, settings)
    hits = Searcher.open(settings).search(
        SearchRequest('"roll initiative"', mode=Mode.KEYWORD, limit=3)
    )
    assert [(h.digest, h.page) for h in hits] == [(digests["scan.pdf"], 1)]


LEAVING_WORKER = """
import json, sys
from pathlib import Path
from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.sweep import MonitorSettings
from bucketdigest.runner.wiring import MonitorDuty
from bucketdigest.search.indexer import IndexDuty
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

store, settings = LocalStore(Path(sys.argv[1])), StoreSettings(bucket=sys.argv[1])
Ingestor(store).ingest([FolderSource(Path(sys.argv[2]), FileFilter(exts=EXTENSION_GROUPS["all"]))])
duty = MonitorDuty(MonitorSettings(), IndexDuty(settings))(store)
Worker(store, WorkerSettings(exit_when_idle=True, idle_sleep=0.1), monitor_duty=duty).run()
heavy = ("lance", "lancedb", "pyarrow", "onnxruntime")
print(json.dumps([name for name in heavy if name in sys.modules]))
"""


def test_a_worker_indexes_in_a_process_of_its_own_and_loads_nothing_for_it(
    tmp_path: Path,
) -> None:
    """Indexing loads Lance, Arrow and the embedding model (half a gigabyte a worker kept for
    good, on top of its digester's): a worker indexes in a process that ends with the run."""
    write_topics(tmp_path / "in")
    bucket = tmp_path / "bucket"
    ran = subprocess.run(
        [sys.executable, "-c", LEAVING_WORKER, str(bucket), str(tmp_path / "in")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(ran.stdout.splitlines()[-1]) == []
    searcher = Searcher.open(StoreSettings(bucket=str(bucket)))
    assert searcher.documents.count_rows() == len(TOPICS)
    assert searcher.search(SearchRequest("ships cannon"))


def test_an_index_missing_files_is_rebuilt_beside_and_searches_answer_again(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    store = LocalStore(bucket)
    index_bucket(store, settings)
    index = SearchIndex.open(index_location(settings))
    assert index.missing_files(store) == []
    lost = next((bucket / "index" / "chunks.lance" / "data").iterdir())
    lost.unlink()
    missing = index.missing_files(store)
    assert missing == [f"index/chunks.lance/data/{lost.name}"]
    meanwhile = Searcher.open(settings)
    found = meanwhile.search(SearchRequest("threshes grain in the barn"))
    assert found and found[0].digest == topics_bucket[1]["world/harvest.md"]
    assert found[0].chunk_id is not None, "until the rebuild, its passages read from its result"
    assert meanwhile.damage and "index files are lost" in meanwhile.damage
    report = index_bucket(store, settings)
    assert report.damage.startswith("the index lacks 1 of its files")
    assert "rebuilt" in report.line()
    assert generation.current(store).current, "searches read the rebuilt tables"
    hits = Searcher.open(settings).search(SearchRequest("threshes grain in the barn"))
    assert [hit.digest for hit in hits][:1] == [topics_bucket[1]["world/harvest.md"]]


class PausedAtRenewal(LocalStore):
    """An indexer's store that, at its holder's first lease renewal, lets ``meanwhile`` run
    first: the holder was paused past its lease and another took over."""

    def __init__(self, root: Path, clock: MovableClock, meanwhile: Callable[[], None]) -> None:
        super().__init__(root, clock=clock)
        self.meanwhile = meanwhile
        self.writes = 0

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        if key == keys.INDEX_WRITER_KEY:
            self.writes += 1
            if self.writes == 2 and self.meanwhile is not None:  # the first is the taking
                self.meanwhile()
        return super().put_if_match(key, data, etag)


def test_an_indexer_paused_past_its_lease_leaves_the_new_holders_rebuild_whole(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket, settings = _copy(topics_bucket, tmp_path)
    clock = MovableClock()
    # one result left to index, so the holder renews its lease (and is paused) while it works
    late = bucket / keys.out_key(topics_bucket[1]["world/harvest.md"])
    late.rename(tmp_path / "late.zip")
    index_bucket(LocalStore(bucket, clock=clock), settings)
    (tmp_path / "late.zip").rename(late)
    rebuild: list[str] = []
    other = LocalStore(bucket, clock=clock)

    def another_holder_starts_a_rebuild() -> None:
        clock.advance(120)  # the paused holder's lease (60 s) is over
        held = lease.acquire(other, "new-holder", 600)
        assert isinstance(held, lease.HeldLease)
        rebuild.append(generation.new_name(other))
        index = SearchIndex.open(index_location(settings), create=True, generation=rebuild[0])
        assert catch_up(other, index).added == 5  # in progress: not switched yet
        rebuild.append(held.etag)

    paused = PausedAtRenewal(bucket, clock, another_holder_starts_a_rebuild)
    report = index_bucket(paused, settings, lease_seconds=60)

    assert rebuild and not report.busy, "the holder took the lease, then was paused"
    assert not report.maintenance, "no maintenance nor drop after the lease was lost"
    generation.switch(other, rebuild[0])  # the new holder completes its rebuild
    rebuilt = SearchIndex.open(index_location(settings), generation=rebuild[0])
    assert rebuilt.documents.count_rows() == 5
    question = SearchRequest("threshes grain in the barn", mode=Mode.KEYWORD)
    harvest = topics_bucket[1]["world/harvest.md"]
    assert [hit.digest for hit in Searcher.open(settings).search(question)][:1] == [harvest]


def test_a_fresh_process_opens_and_maintains_the_index_without_lancedbs_rest_client(
    tmp_path: Path,
) -> None:
    """lancedb is imported without building the REST client it does not need (2 s of every
    indexing process's start): opening, writing and indexing a table still work."""
    program = f"""
import sys
from bucketdigest.search.index import REST_CLIENT, SearchIndex
from bucketdigest.search.location import IndexLocation
index = SearchIndex.open(IndexLocation({str(tmp_path / "index")!r}, {{}}), create=True)
assert index.stats().chunks == 0
table = index.db.create_table("words", data=[{{"text": "hello world"}}, {{"text": "other"}}])
from lancedb.index import FTS
table.create_index("text", config=FTS())
found = table.search("hello", query_type="fts").to_list()
assert [row["text"] for row in found] == ["hello world"], found
assert f"{{REST_CLIENT}}.api" not in sys.modules, "the REST client's API was built"
assert f"{{REST_CLIENT}}.models" in sys.modules, "lancedb imported the models another way"
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
