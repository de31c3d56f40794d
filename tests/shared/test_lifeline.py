"""Children a worker starts are not cut short by the Ctrl-C meant for it: they begin with
SIGINT blocked, even the first child of a process (multiprocessing starts its resource
tracker then, and unblocks SIGINT after it), and the worker takes Ctrl-C once it can."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
