"""How every process logs: readable lines for people, or one JSON object a line
(``--log-format json``) for log aggregation, each carrying the context it was written in
(worker id, document hash, attempt) without every call site passing it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pythonjsonlogger.json import JsonFormatter


class _OurHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler ``LogSetup.apply`` installs (and replaces on a second call)."""


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


CONTEXT_FIELDS = ("worker_id", "digest", "attempt")
"""What ``log_context`` may set; JSON lines carry them whenever they are known."""

_context: ContextVar[dict[str, Any]] = ContextVar("bucketdigest_log_context", default={})  # noqa: B039

_TEXT = "%(asctime)s %(processName)s %(levelname)s %(name)s: %(message)s"
_JSON = "%(asctime)s %(levelname)s %(name)s %(processName)s %(message)s"


@dataclass(frozen=True)
class LogSetup:
    """Level and format, picklable so that spawned worker processes log like their parent."""

    level: int = logging.WARNING
    format: LogFormat = LogFormat.TEXT

    def apply(self) -> None:
        """Configure the root logger of this process: our handler replaces the one an earlier
        call installed; handlers installed by others (a test runner's) are left alone."""
        root = logging.getLogger()
        for installed in [h for h in root.handlers if isinstance(h, _OurHandler)]:
            root.removeHandler(installed)
        handler = _OurHandler()
        handler.addFilter(_add_context)
        if self.format is LogFormat.JSON:
            handler.setFormatter(
                JsonFormatter(
                    _JSON,
                    rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                    timestamp=False,
                )
            )
        else:
            handler.setFormatter(logging.Formatter(_TEXT))
        root.addHandler(handler)
        root.setLevel(self.level)
        logging.captureWarnings(True)

    @classmethod
    def current(cls) -> LogSetup:
        """How this process logs now (for handing on to child processes)."""
        root = logging.getLogger()
        json_handler = any(
            isinstance(h, _OurHandler) and isinstance(h.formatter, JsonFormatter)
            for h in root.handlers
        )
        return cls(root.level, LogFormat.JSON if json_handler else LogFormat.TEXT)


def _add_context(record: logging.LogRecord) -> bool:
    for name, value in _context.get().items():
        if not hasattr(record, name):
            setattr(record, name, value)
    return True


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Every record logged inside the block (in this thread) carries ``fields``."""
    unknown = set(fields) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields: {sorted(unknown)}")
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)
