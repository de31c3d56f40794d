"""What an operator watches: JSON logs for aggregation, ``status --watch`` in a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from bucketdigest.shared import keys
from bucketdigest.shared.stores.local import LocalStore

CLI = [sys.executable, "-m", "bucketdigest"]


def _bucketdigest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_json_logs_are_one_object_a_line_with_worker_hash_and_attempt(
    tmp_path: Path, pdf_folder: Path
) -> None:
    bucket = str(tmp_path / "bucket")
    assert _bucketdigest("ingest", str(pdf_folder), "--bucket", bucket).returncode == 0
    work = _bucketdigest(
        "-v", "work", "--bucket", bucket, "--exit-when-idle", "--log-format", "json"
    )
    assert work.returncode == 0, work.stderr
    events = [json.loads(line) for line in work.stderr.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(events[0])
    job_events = [e for e in events if "digest" in e]
    assert {e["digest"] for e in job_events} == {
        keys.parse_out_key(i.key) for i in LocalStore(Path(bucket)).list(keys.OUT_PREFIX)
    }
    assert all(e["attempt"] == 1 and e["worker_id"] for e in job_events)
    (summary,) = [json.loads(line) for line in work.stdout.splitlines()]
    assert summary["exit_reason"] == "idle: no job left to claim"
    assert summary["outcomes"] == {"done": len({e["digest"] for e in job_events})}
    text = _bucketdigest("work", "--bucket", bucket, "--exit-when-idle").stdout
    assert re.fullmatch(r"worker \S+ stopped \(idle: no job left to claim\): no jobs\n", text)
    monitor = _bucketdigest("--log-format", "json", "-vv", "monitor", "--bucket", bucket, "--once")
    assert monitor.returncode == 0, monitor.stderr
    assert all(json.loads(line)["level"] for line in monitor.stderr.splitlines())


def _read_until(fd: int, counts: list[str], timeout: float, also: str = "") -> str:
    """Read the terminal until it shows ``counts`` in the table and ``also`` after it.

    A frame arrives in pieces: stopping at the table's row could cut the lines below it.
    """
    screen = ""
    deadline = time.monotonic() + timeout

    def drawn() -> bool:
        return counts in _counts(screen) and also in screen

    while (left := deadline - time.monotonic()) > 0 and not drawn():
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                screen += os.read(fd, 65536).decode(errors="replace")
            except OSError:
                break
    return screen


def _counts(screen: str) -> list[list[str]]:
    """Every row of the counts table drawn on ``screen``: todo, processing, failed, done."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    return [
        re.findall(r"\d+", row)
        for row in re.findall(r"│\s*(\d+\s*│\s*\d+\s*│\s*\d+\s*│\s*\d+)\s*│", plain)
    ]


def test_status_watch_refreshes_in_a_terminal_and_leaves_on_ctrl_c(
    tmp_path: Path, pdf_folder: Path
) -> None:
    bucket = str(tmp_path / "bucket")
    assert _bucketdigest("ingest", str(pdf_folder), "--bucket", bucket).returncode == 0
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
    process = subprocess.Popen(
        [*CLI, "status", "--watch", "--every", "1", "--bucket", bucket],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    try:
        first = _read_until(leader, ["3", "0", "0", "0"], 30, also="time left at that rate")
        assert "Documents by state" in first
        assert "time left at that rate" in first
        # three documents queued, none done yet
        assert ["3", "0", "0", "0"] in _counts(first)
        queued = LocalStore(Path(bucket))
        for digest, _ in [keys.parse_raw_key(i.key) for i in queued.list(keys.RAW_PREFIX)][:1]:
            queued.put(keys.out_key(digest), b"")
        later = _read_until(leader, ["3", "0", "0", "1"], 10)
        assert "\x1b[" in later  # redrawn in place
        assert ["3", "0", "0", "1"] in _counts(later)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        os.close(leader)
