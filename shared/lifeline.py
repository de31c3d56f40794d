"""A spawned child that ends with the process that started it, and is not cut short by the
Ctrl-C meant for its parent."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.resource_tracker
import os
import signal
import threading
from collections.abc import Iterator


def exit_with_parent() -> None:
    """Leave at once, quietly, when the process that started us is gone (killed with SIGKILL,
    say). Call it first thing in a spawned child: a child must never outlive its worker (an
    orphan keeps the worker's stderr open, and whoever waits for it waits for ever), nor print
    tracebacks about a broken pipe."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@contextlib.contextmanager
def deaf_to_ctrl_c() -> Iterator[None]:
    """Start child processes inside this block to keep the terminal's Ctrl-C from them until
    they say what it means to them: they begin with SIGINT blocked (the signal mask survives
    the ``exec`` of a spawned child), so a Ctrl-C while they import does not end them with a
    traceback each; it waits in them. A worker process takes it once its handler is set
    (:func:`hear_ctrl_c`): it hands its job back. A digester or indexer child never does:
    its worker stops it. Only this thread's mask changes, so this process itself still gets
    its Ctrl-C (through its other threads, or as the block ends). Outside the main thread,
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # multiprocessing starts its resource tracker with the first child, and unblocks SIGINT
    # after it: started first, it leaves the mask alone
    multiprocessing.resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def hear_ctrl_c() -> None:
    """In a child started by :func:`deaf_to_ctrl_c`, once its SIGINT handler is set: take
    Ctrl-C from now on (one that came meanwhile is delivered now)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
