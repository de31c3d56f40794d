"""How many workers this machine has room for: one per core it may use, as many as its free
memory holds at a worker's measured peak, leaving the system room. In a container the cgroup's
CPU quota and memory limit count, not the host's cores and memory.

``run`` and ``work`` start this many unless ``--workers`` says otherwise, and say why
("4 workers: 8 cores, 7.6 GiB free").
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

WORKER_PEAK_BYTES = 1 << 30
"""What one worker's process tree may take: 0.63 GiB for the median real-world document and
0.80 GiB at the 95th percentile (docs/benchmarks.md, "Memory per document"), rounded up."""
SYSTEM_RESERVE_BYTES = 512 << 20
"""Free memory left to the system and everything else the machine runs."""

CGROUP = Path("/sys/fs/cgroup")
MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class Capacity:
    """What this machine offers the workers, and how many fit."""

    cores: int
    free_bytes: int | None
    """Memory free for workers (None: unknown, then cores alone decide)."""
    limited_by: str = ""
    """``cgroup`` when a container's limits decided, else empty."""

    @property
    def workers(self) -> int:
        by_memory = (
            (self.free_bytes - SYSTEM_RESERVE_BYTES) // WORKER_PEAK_BYTES
            if self.free_bytes is not None
            else self.cores
        )
        return max(1, min(self.cores, by_memory))

    def describe(self, workers: int | None = None) -> str:
        """``4 workers: 8 cores, 7.6 GiB free`` (``--workers`` given: ``2 workers (--workers);
        the machine has room for 4: ...``)."""
        facts = f"{self.cores} core{'s' if self.cores != 1 else ''}"
        if self.free_bytes is not None:
            facts += f", {self.free_bytes / (1 << 30):.1f} GiB free"
        if self.limited_by:
            facts += f" (the {self.limited_by}'s limits)"
        count = self.workers
        noun = "worker" if count == 1 else "workers"
        if workers is None or workers == count:
            return f"{count} {noun}: {facts}"
        chosen = "worker" if workers == 1 else "workers"
        return f"{workers} {chosen} (--workers); room for {count}: {facts}"


def machine_capacity(cgroup: Path = CGROUP, meminfo: Path = MEMINFO) -> Capacity:
    """This machine's cores and free memory as this process may use them."""
    cores = len(os.sched_getaffinity(0))
    free = _available(meminfo)
    quota = _cpu_quota(cgroup)
    room = _cgroup_room(cgroup)
    limited = ""
    if quota is not None and quota < cores:
        cores, limited = quota, "cgroup"
    if room is not None and (free is None or room < free):
        free, limited = room, "cgroup"
    return Capacity(max(1, cores), free, limited)


def machine_cores(cgroup: Path = CGROUP) -> int:
    """The cores this process may run on, within a container's CPU quota."""
    cores = len(os.sched_getaffinity(0))
    quota = _cpu_quota(cgroup)
    return max(1, min(cores, quota) if quota is not None else cores)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_quota(cgroup: Path) -> int | None:
    """Cores the cgroup's quota amounts to (rounded up), None without one: ``cpu.max``
    (cgroup v2, ``max 100000`` when unlimited) or ``cpu.cfs_quota_us`` (v1, -1)."""
    if (text := _read(cgroup / "cpu.max")) is not None:
        quota, _, period = text.partition(" ")
        if quota != "max" and quota.isdigit() and period.isdigit() and int(period):
            return max(1, math.ceil(int(quota) / int(period)))
        return None
    quota = _read(cgroup / "cpu" / "cpu.cfs_quota_us")
    period = _read(cgroup / "cpu" / "cpu.cfs_period_us")
    if quota and period and quota.isdigit() and period.isdigit() and int(quota) and int(period):
        return max(1, math.ceil(int(quota) / int(period)))  # v1's -1 (no quota) is no digits
    return None


def _cgroup_room(cgroup: Path) -> int | None:
    """What the cgroup's memory limit leaves (limit minus use), None without a limit."""
    limit = _read(cgroup / "memory.max")
    used = _read(cgroup / "memory.current")
    if limit is None:  # cgroup v1
        limit = _read(cgroup / "memory" / "memory.limit_in_bytes")
        used = _read(cgroup / "memory" / "memory.usage_in_bytes")
    if not limit or not limit.isdigit() or int(limit) >= 1 << 60:  # "max", or v1's "no limit"
        return None
    return max(0, int(limit) - (int(used) if used and used.isdigit() else 0))


def _available(meminfo: Path) -> int | None:
    """``MemAvailable`` of ``/proc/meminfo``, in bytes."""
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None
