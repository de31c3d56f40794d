"""A costly fixture built once per test run, whatever the number of pytest-xdist workers: a
session fixture is built once per worker process, so a bucket that real workers fill took
each of the suite's processes its own minute."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """The folder ``name``, filled by ``build(folder)`` the first time any worker of this run
    asks for it, and what ``build`` returned (JSON, kept beside it). The others wait for it
    under a lock, then share it: whoever asks must not change it (copy it first). A build
    that fails leaves nothing, and the next to ask builds again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / f"built-once-{name}"
    made = root / f"built-once-{name}.json"
    with (root / f"built-once-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            made.write_text(json.dumps(build(folder)))
    return folder, json.loads(made.read_text())


def roots(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The folders this worker's tests wrote into: its own, and the run's shared builds."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return [base, *sorted(shared.glob("built-once-*/"))] if shared != base else [base]
