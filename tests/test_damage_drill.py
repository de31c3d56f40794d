"""The damage drill of ``scripts/bench/damage.py`` on 32 notes, 4 queued ones and a broken
file: one damaged object costs only itself, and everything whose source survives comes back."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench_module() -> ModuleType:
    """``scripts/bench/damage.py`` (the benchmarks import each other by their bare names)."""
    sys.path.insert(0, str(ROOT / "scripts" / "bench"))
    return importlib.import_module("damage")


@pytest.mark.slow
def test_damage_costs_only_itself_and_everything_whose_source_survives_comes_back(
    tmp_path: Path,
) -> None:
    damage = _bench_module()
    sources = tmp_path / "in"
    sources.mkdir()
    for n in range(32):
        (sources / f"note-{n:02d}.md").write_text(
            f"# Note {n}\n\nThe quartermaster{n:02d} inventories provisions and ammunition "
            f"for expedition number {n}.\n"
        )
    (sources / "broken.pdf").write_bytes(b"%PDF-1.7 not a PDF at all")
    later = tmp_path / "later"
    later.mkdir()
    for n in range(4):
        (later / f"later-{n}.md").write_text(f"# Later {n}\n\nQueued, not yet done {n}.\n")

    report = damage.drill(sources, tmp_path / "bucket", pending=lambda _: [later])

    assert report.documents == 37
    assert sum(len(keys) for keys in report.damaged.values()) >= 20
    for moment, (found, whole) in report.searches.items():
        assert found == whole and whole >= 20, (moment, found, whole)
    assert report.listed[0] == report.listed[1] > 0, "status names every damaged object"
    assert report.mended_markers == 3, "two todo markers and the dead letter rebuilt"
    assert report.remade == 5, "the results cut short or garbled whose source is whole"
    assert report.restored_sources == 3
    assert report.back_to_done[0] == report.back_to_done[1] == 35
    assert len(report.lost) == 1
    assert len(report.listed_at_the_end) == 2, report.listed_at_the_end  # the lost one's two
    assert list(report.failed.values()) and "not a readable PDF" in next(
        iter(report.failed.values())
    )
    assert report.vanished == []
