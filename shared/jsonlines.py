"""JSON lines (``chunks.jsonl`` and the like): the one reader and writer of the format.

A record is written with ``ensure_ascii=False``, so its strings keep U+2028, U+2029, U+0085,
form feeds and the other characters that :meth:`str.splitlines` takes for line ends; JSON
escapes only ``\\n`` among them. So lines are split on ``\\n`` alone, never by ``str.splitlines``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def dumps_lines(records: Iterable[Any]) -> bytes:
    """One JSON document a line, each ending in ``\\n``."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def loads_lines(data: bytes | str) -> list[Any]:
    """Every record of JSON lines (blank lines skipped); ValueError on a line that is not JSON.
    All lines are parsed in one call, a third of the time of one call a line."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    lines = [line for line in text.split("\n") if line.strip()]
    return json.loads(f"[{','.join(lines)}]") if lines else []
