"""Children a worker starts are not cut short by the Ctrl-C meant for it: they begin with
SIGINT blocked, even the first child of a process (multiprocessing starts its resource
tracker then, and unblocks SIGINT after it), and the worker takes Ctrl-C once it can."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

FIRST_CHILD = """
import multiprocessing, signal

from bucketdigest.shared.lifeline import deaf_to_ctrl_c, hear_ctrl_c


def report(answers):
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    hear_ctrl_c()
    answers.send((blocked, signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())))


if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    answers, sender = context.Pipe()  # not a Queue: that would start the resource tracker
    with deaf_to_ctrl_c():
        child = context.Process(target=report, args=(sender,))
        child.start()
    mine = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    print(answers.recv(), mine)
    child.join()
"""


def test_the_first_child_starts_deaf_to_ctrl_c_and_hears_it_once_it_says_so(
    tmp_path: Path,
) -> None:
    program = tmp_path / "first_child.py"  # a file: spawned children import its functions
    program.write_text(FIRST_CHILD)
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "(True, False) False"


CTRL_C_WHILE_STARTING = """
import os, signal, sys

from bucketdigest.runner.wiring import OpenStore
from bucketdigest.shared.config import StoreSettings
from bucketdigest.worker import pool
from bucketdigest.worker.loop import WorkerSettings

start_one = pool.start_workers


def start_with_ctrl_c_between(count, *args, **kwargs):
    first = start_one(1, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C would, between two starts
    return first + start_one(count - 1, *args, **kwargs)


if __name__ == "__main__":
    pool.start_workers = start_with_ctrl_c_between
    # workers that never leave by themselves: only the Ctrl-C ends them
    settings = WorkerSettings(exit_when_idle=False, monitor_every=None)
    pool.run_workers(2, OpenStore(StoreSettings(bucket=sys.argv[1])), settings)
    print("all stopped")
"""


def test_a_ctrl_c_while_workers_start_stops_every_one_of_them(tmp_path: Path) -> None:
    """Not click's "Aborted!" with workers left running: the one started before the Ctrl-C
    and the one started after it both stop, and the command ends normally."""
    program = tmp_path / "ctrl_c_while_starting.py"
    program.write_text(CTRL_C_WHILE_STARTING)
    process = subprocess.Popen(
        [sys.executable, str(program), str(tmp_path / "bucket")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the workers it left running too
        process.communicate()
        pytest.fail("still running 60 s after the Ctrl-C: a worker was left running")
    assert process.returncode == 0, stderr
    assert stdout.strip() == "all stopped"
    assert "KeyboardInterrupt" not in stderr
