"""A worker's index duty: its indexer process ends with the worker, and no process is started
when another indexer holds the lease or the index is fresh."""

from __future__ import annotations

import multiprocessing
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bucketdigest.search import lease
from bucketdigest.search.indexer import IndexDuty, index_bucket
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from tests.waiting import wait_until

LEAVING_BEHIND_ANOTHER_INDEXER = """
import os, sys
from pathlib import Path
from bucketdigest.search.indexer import IndexDuty
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore

if __name__ == "__main__":
    print(os.getpid(), flush=True)
    IndexDuty(StoreSettings(bucket=sys.argv[1]))(LocalStore(Path(sys.argv[1])), leaving=True)
"""


def _children(pid: int) -> list[int]:
    try:
        return [int(n) for n in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _settled(pids: list[int]) -> Callable[[], bool]:
    """A condition for :func:`wait_until` asked every half second: whether the processes have
    done starting, their CPU time the same as when it was last asked."""
    last: dict[int, int] = {}

    def unchanged() -> bool:
        now = {pid: _cpu_ticks(pid) for pid in pids}
        still = now == last
        last.update(now)
        return still

    return unchanged


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_a_killed_workers_indexer_exits_with_it(tmp_path: Path) -> None:
    """A leaving worker's indexer waits for the other indexer; killed meanwhile, the worker
    must not leave it behind (an orphan kept the worker's stderr open for good, and whoever
    waited for the worker's output waited for ever)."""
    store = LocalStore(tmp_path)
    assert isinstance(lease.acquire(store, "another-machine", seconds=600), lease.HeldLease)
    worker = subprocess.Popen(
        [sys.executable, "-c", LEAVING_BEHIND_ANOTHER_INDEXER, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    pid = int(worker.stdout.readline())
    children = wait_until(lambda: _children(pid), "the worker started no indexer")
    # the indexer is up and waiting for the lease once its CPU time stops growing
    wait_until(_settled(children), "the indexer never settled", every=0.5)
    assert worker.poll() is None and all(_alive(child) for child in children)
    worker.send_signal(signal.SIGKILL)
    _, errors = worker.communicate(timeout=20)  # stderr ends only when every writer has gone
    wait_until(
        lambda: not any(_alive(child) for child in children), "the indexer outlived its worker", 5
    )
    assert "Traceback" not in errors


def test_no_indexer_is_started_while_another_holds_the_lease_or_the_index_is_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)

    def no_indexer(*args: object, **kwargs: object) -> None:
        pytest.fail("an indexer process was started")

    monkeypatch.setattr("bucketdigest.search.indexer.ProcessPoolExecutor", no_indexer)
    duty = IndexDuty(StoreSettings(bucket=str(tmp_path)), every=60)
    held = lease.acquire(store, "another-machine", seconds=600)
    assert isinstance(held, lease.HeldLease)
    duty(store)
    lease.release(store, held, "indexed")
    duty(store)  # released just now: fresh for another minute


def test_no_indexer_is_started_in_a_new_bucket_nor_on_leaving_a_run_that_indexes_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    started: list[object] = []

    def counting(*args: object, **kwargs: object) -> object:
        started.append(args)
        raise RuntimeError("counted")

    monkeypatch.setattr("bucketdigest.search.indexer.ProcessPoolExecutor", counting)
    settings = StoreSettings(bucket=str(tmp_path))
    IndexDuty(settings, every=0)(store)
    IndexDuty(settings, every=0)(store, leaving=True)
    assert started == [], "no result and no index: nothing to index"
    store.put(keys.out_key("ab" * 32), b"a result")
    IndexDuty(settings, every=0, when_leaving=False)(store, leaving=True)
    assert started == [], "the run indexes once its workers are gone"
    with pytest.raises(RuntimeError, match="counted"):
        IndexDuty(settings, every=0)(store, leaving=True)
    assert len(started) == 1, "a result to index: the leaving worker's indexer starts"


def test_the_worker_makes_room_before_its_indexer_starts_and_only_when_one_starts(
    tmp_path: Path,
) -> None:
    """A worker stops its idle digester child before indexing: the two at once passed 1 GiB."""
    store = LocalStore(tmp_path)
    duty = IndexDuty(StoreSettings(bucket=str(tmp_path)), every=60)
    children_at_call: list[int] = []

    def make_room() -> None:
        children_at_call.append(len(multiprocessing.active_children()))

    held = lease.acquire(store, "another-machine", seconds=600)
    assert isinstance(held, lease.HeldLease)
    duty(store, make_room=make_room)
    assert children_at_call == []  # another indexer at work: the worker keeps its child
    lease.release(store, held, "indexed")
    IndexDuty(StoreSettings(bucket=str(tmp_path)), every=0)(store, make_room=make_room)
    assert children_at_call == [0]  # called once, before the indexer process started
    assert "index: 0 added" in store.get(keys.INDEX_WRITER_KEY).data.decode()


def test_a_worker_asked_to_stop_does_not_wait_for_its_indexer(tmp_path: Path) -> None:
    """Ctrl-C reaches a worker while its indexer waits for another indexer (a leaving worker
    waits up to two minutes for one): the duty returns within moments, and the indexer it
    started ends without touching the other's lease."""
    store = LocalStore(tmp_path)
    store.put(keys.out_key("ab" * 32), b"a result")
    held = lease.acquire(store, "another-machine", seconds=600)
    assert isinstance(held, lease.HeldLease)
    stopping = threading.Event()
    duty = IndexDuty(StoreSettings(bucket=str(tmp_path)))
    returned = threading.Event()

    def run_duty() -> None:
        duty(store, leaving=True, stopping=stopping)
        returned.set()

    threading.Thread(target=run_duty, daemon=True).start()
    indexers = wait_until(multiprocessing.active_children, "the worker started no indexer")
    wait_until(_settled([p.pid for p in indexers if p.pid]), "it never settled", every=0.5)
    assert not returned.is_set(), "the indexer did not wait for the other's lease"
    stopping.set()
    wait_until(returned.is_set, "the duty still waits for its indexer", 10)
    wait_until(lambda: not any(p.is_alive() for p in indexers), "the indexer outlived it", 10)
    assert store.get(keys.INDEX_WRITER_KEY).etag == held.etag


def test_an_indexer_asked_to_stop_commits_nothing_more_and_leaves_the_rest_to_the_next(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bucket = tmp_path / "bucket"
    shutil.copytree(topics_bucket[0], bucket)
    store, settings = LocalStore(bucket), StoreSettings(bucket=str(bucket))
    stopped = index_bucket(store, settings, stopping=lambda: True)
    assert (stopped.added, stopped.maintenance) == (0, [])
    resumed = index_bucket(store, settings)  # the lease was released: taken at once
    assert resumed.added == len(topics_bucket[1])
