"""Which roles' code a module may import: the server reads and stores, it converts nothing,
so nothing under ``serve/`` imports the worker's code (the chain's names and the queue's
choosing live in ``shared/``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_server_imports_nothing_of_the_worker() -> None:
    modules = sorted((ROOT / "serve").rglob("*.py"))
    assert len(modules) > 10
    offending = {
        path.relative_to(ROOT).as_posix(): sorted(
            m for m in _imports(path) if m.startswith("bucketdigest.worker")
        )
        for path in modules
    }
    assert {k: v for k, v in offending.items() if v} == {}
