"""A spawned child that ends with the worker that started it."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading


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
