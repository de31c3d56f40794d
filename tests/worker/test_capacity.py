"""Workers by default from the machine: one per core it may use, as many as its free memory
holds, a container's cgroup limits counted; the start line of ``work`` and ``run`` says how
many and why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker import capacity
from bucketdigest.worker.capacity import Capacity, machine_capacity

GIB = 1 << 30


def _meminfo(folder: Path, available_gib: float) -> Path:
    path = folder / "meminfo"
    kib = int(available_gib * GIB) // 1024
    path.write_text(
        f"MemTotal:       65000000 kB\nMemFree:         1000 kB\nMemAvailable:   {kib} kB\n"
    )
    return path


@pytest.fixture
def eight_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(8)))


@pytest.mark.usefixtures("eight_cores")
def test_a_machine_without_limits_gets_a_worker_per_core_its_memory_holds(tmp_path: Path) -> None:
    roomy = machine_capacity(tmp_path / "no-cgroup", _meminfo(tmp_path, 30))
    assert (roomy.workers, roomy.describe()) == (8, "8 workers: 8 cores, 30.0 GiB free")
    tight = machine_capacity(tmp_path / "no-cgroup", _meminfo(tmp_path, 3.6))
    assert tight.workers == 3  # (3.6 GiB - 0.5 for the system) / 1 GiB each
    assert tight.describe(2) == "2 workers (--workers); room for 3: 8 cores, 3.6 GiB free"
    starved = machine_capacity(tmp_path / "no-cgroup", _meminfo(tmp_path, 0.4))
    assert starved.workers == 1, "always one"


@pytest.mark.usefixtures("eight_cores")
def test_a_containers_cgroup_v2_limits_count_not_the_hosts(tmp_path: Path) -> None:
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cpu.max").write_text("250000 100000\n")  # 2.5 cores
    (cgroup / "memory.max").write_text(f"{6 * GIB}\n")
    (cgroup / "memory.current").write_text(f"{GIB}\n")
    found = machine_capacity(cgroup, _meminfo(tmp_path, 60))
    assert (found.cores, found.free_bytes, found.workers) == (3, 5 * GIB, 3)
    assert found.describe() == "3 workers: 3 cores, 5.0 GiB free (the cgroup's limits)"
    (cgroup / "cpu.max").write_text("max 100000\n")
    (cgroup / "memory.max").write_text("max\n")
    assert machine_capacity(cgroup, _meminfo(tmp_path, 60)).workers == 8


@pytest.mark.usefixtures("eight_cores")
def test_a_cgroup_v1_quota_and_limit_count_too(tmp_path: Path) -> None:
    cgroup = tmp_path / "cgroup"
    (cgroup / "cpu").mkdir(parents=True)
    (cgroup / "memory").mkdir()
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (cgroup / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (cgroup / "memory" / "memory.limit_in_bytes").write_text(f"{4 * GIB}\n")
    (cgroup / "memory" / "memory.usage_in_bytes").write_text("0\n")
    assert machine_capacity(cgroup, _meminfo(tmp_path, 60)) == Capacity(1, 4 * GIB, "cgroup")
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (cgroup / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert machine_capacity(cgroup, _meminfo(tmp_path, 60)).workers == 8


def test_work_says_how_many_workers_it_starts_and_why(tmp_path: Path) -> None:
    LocalStore(tmp_path / "bucket")
    env = {k: v for k, v in os.environ.items() if k != "BUCKETDIGEST_WORKERS"}
    started = subprocess.run(
        [sys.executable, "-m", "bucketdigest", "work", "--exit-when-idle",
         "--bucket", str(tmp_path / "bucket")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    expected = capacity.machine_capacity()  # free memory moves: the counts do not
    assert f"{expected.workers} workers: {expected.cores} cores, " in started.stderr
    given = subprocess.run(
        [sys.executable, "-m", "bucketdigest", "work", "--exit-when-idle",
         "--bucket", str(tmp_path / "bucket"), "--workers", "1"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert f"1 worker (--workers); room for {expected.workers}: " in given.stderr
