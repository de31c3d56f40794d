"""Waiting on a condition with a deadline, the one way the tests wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(found: Callable[[], T], never: str, seconds: float = 60, every: float = 0.05) -> T:
    """``found()`` as soon as it is truthy, asked every ``every`` seconds; AssertionError
    saying what ``never`` happened once ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while not (value := found()):
        assert time.monotonic() < deadline, never
        time.sleep(every)
    return value
