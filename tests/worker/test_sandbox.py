"""The digester child: it never outlives the worker that started it, leaves quietly, is
replaced when a document left it holding too much memory, and starts as its worker is now,
though it is forked from a server started earlier."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters import preloads
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.sandbox import (
    HUGE_PAGES,
    TUNABLES,
    Sandbox,
    SandboxLimits,
    _huge_pages_for_the_fork_server,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

WORKER = """
import multiprocessing, sys
from bucketdigest.worker.sandbox import Sandbox, SandboxLimits

INSIDE = "import pathlib, threading; pathlib.Path({marker!r}).touch(); threading.Event().wait()"
# a digester that never ends: only its worker's death ends it

if __name__ == "__main__":
    sandbox = Sandbox(SandboxLimits(timeout=300))
    sandbox.start()
    print(multiprocessing.active_children()[0].pid, flush=True)
    sandbox.call(exec, INSIDE.format(marker=sys.argv[1]))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_a_child_whose_worker_is_killed_exits_at_once_without_a_traceback(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(inside)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    child = int(worker.stdout.readline())
    # the child is inside the call once it has touched the file
    wait_until(inside.exists, "the child never ran the call")
    assert _alive(child)
    worker.send_signal(signal.SIGKILL)
    # stderr reaches its end only once every writer, the child included, has gone
    _, errors = worker.communicate(timeout=10)
    wait_until(lambda: not _alive(child), "the child outlived its worker", seconds=5)
    assert "Traceback" not in errors


HOLD = "import sys; sys.held = [*getattr(sys, 'held', []), b'\\x01' * ({mebibytes} << 20)]"
"""Run in the child by ``exec``: keep memory resident, as a converter's buffers may (the child
imports no test module: a clean checkout's pytest does not put ``tests`` on its path)."""
PID = "__import__('os').getpid()"


def test_a_child_that_keeps_too_much_after_a_document_is_replaced() -> None:
    sandbox = Sandbox(SandboxLimits(timeout=60, recycle_above=300 << 20))
    try:
        first = sandbox.call(eval, PID)
        for mebibytes in (10, 10):
            sandbox.call(exec, HOLD.format(mebibytes=mebibytes))
            sandbox.document_done()
            assert sandbox.call(eval, PID) == first  # a light child is kept for the next one
        sandbox.call(exec, HOLD.format(mebibytes=400))
        sandbox.document_done()
        assert sandbox.call(eval, PID) != first  # the heavy one was replaced
    finally:
        sandbox.close()


FRAGMENT = (
    "import sys; blocks = [bytes(1024) for _ in range({count})]; "
    "sys.held = [*getattr(sys, 'held', []), blocks[-1]]; del blocks"
)
"""Run in the child by ``exec``: allocate and free heap blocks, one kept above the others, so
glibc cannot hand the freed pages back by itself (as a converter's freed buffers stay)."""
RESIDENT = (
    "int(open('/proc/self/statm').read().split()[1]) * __import__('os').sysconf('SC_PAGE_SIZE')"
)


def test_a_child_gives_back_the_memory_a_call_freed() -> None:
    sandbox = Sandbox(SandboxLimits(timeout=60))
    try:
        before = sandbox.call(eval, RESIDENT)
        for _ in range(4):  # each call frees less than would have it collect
            sandbox.call(exec, FRAGMENT.format(count=20_000))
        assert sandbox.call(eval, RESIDENT) - before < 12 << 20
    finally:
        sandbox.close()


def test_a_child_sees_its_workers_environment_as_it_is_when_the_child_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = Sandbox(SandboxLimits(timeout=60))
    second = Sandbox(SandboxLimits(timeout=60))
    try:
        monkeypatch.setenv("BUCKETDIGEST_SANDBOX_PROBE", "before")
        assert first.call(os.getenv, "BUCKETDIGEST_SANDBOX_PROBE") == "before"  # server started
        monkeypatch.setenv("BUCKETDIGEST_SANDBOX_PROBE", "after")
        monkeypatch.setenv("BUCKETDIGEST_SANDBOX_NEW", "new")
        assert second.call(os.getenv, "BUCKETDIGEST_SANDBOX_PROBE") == "after"
        assert second.call(os.getenv, "BUCKETDIGEST_SANDBOX_NEW") == "new"
        assert first.call(os.getppid) == second.call(os.getppid) != os.getpid()  # one server
    finally:
        first.close()
        second.close()


STARTED_WITH = "open('/proc/self/environ', 'rb').read().split(b'\\0')"
"""Evaluated in the child: the environment its program started with (the fork server's)."""


def test_children_allocate_with_huge_pages_and_the_programs_they_run_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TUNABLES, raising=False)
    sandbox = Sandbox(SandboxLimits(timeout=60))
    try:
        assert f"{TUNABLES}={HUGE_PAGES}".encode() in sandbox.call(eval, STARTED_WITH)
        assert sandbox.call(os.getenv, TUNABLES) is None  # what Tesseract would be given
    finally:
        sandbox.close()
    assert os.environ.get(TUNABLES) is None


@pytest.mark.parametrize(
    ("users", "while_starting"),
    [
        ("glibc.malloc.arena_max=2", f"glibc.malloc.arena_max=2:{HUGE_PAGES}"),
        ("glibc.malloc.hugetlb=0", "glibc.malloc.hugetlb=0"),
    ],
)
def test_a_users_glibc_tunables_are_kept(
    monkeypatch: pytest.MonkeyPatch, users: str, while_starting: str
) -> None:
    monkeypatch.setenv(TUNABLES, users)
    with _huge_pages_for_the_fork_server():
        assert os.environ[TUNABLES] == while_starting
    assert os.environ[TUNABLES] == users


LAYOUT_MODEL = "__import__('pymupdf')._get_layout"
"""Evaluated in the child: pymupdf's layout reader, None when pages are read without it."""


def test_a_child_reads_legacy_pages_without_the_layout_model_and_layout_ones_with_it(
    tmp_path: Path,
) -> None:
    """The fork server never loads the layout model; the child must load it as importing
    pymupdf does, or a legacy conversion would switch it on and run it on every page."""
    pdf = make_pdf(tmp_path / "rules.pdf", title="Rules", pages=2)
    sandbox = Sandbox(SandboxLimits(timeout=120), preload=preloads())
    try:
        legacy = ConverterOptions(mode="legacy")
        assert len(sandbox.call(convert, pdf, "pdf", tmp_path / "legacy", legacy).pages) == 2
        assert sandbox.call(eval, f"{LAYOUT_MODEL} is None")
        assert sandbox.call(convert, pdf, "pdf", tmp_path / "layout", ConverterOptions()).pages
        assert sandbox.call(eval, f"callable({LAYOUT_MODEL})")
    finally:
        sandbox.close()
