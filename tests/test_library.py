"""The library's entry point: what a Python program does with ``from bucketdigest import
Bucket``, end to end on real documents."""

from __future__ import annotations

from pathlib import Path

import pytest

import bucketdigest
from bucketdigest import Bucket
from bucketdigest.shared.errors import NotFound
from tests.search.conftest import write_topics


def test_a_program_ingests_works_indexes_searches_and_reads_results(tmp_path: Path) -> None:
    write_topics(tmp_path / "notes")
    bucket = Bucket(tmp_path / "bucket")
    report = bucket.ingest(tmp_path / "notes", ext="text")
    assert len(report.files) == 5
    assert bucket.work().outcomes == {"done": 5}
    assert bucket.index().added == 5
    hits = bucket.search("boarding the enemy ship", limit=3)
    assert hits[0].names == ("naval/broadsides.md",)
    assert bucket.search("crops and farming villages", documents=True, mode="semantic")[
        0
    ].names == ("world/harvest.md",)
    assert bucket.status().counts == {"todo": 0, "processing": 0, "failed": 0, "done": 5}
    assert {entry.path for entry in bucket.files()} >= {"melee/grappling.md"}
    with bucket.result("grappling.md") as result:
        assert "a pinned creature cannot move" in result.text("document.md")
        assert result.info()["names"] == ["melee/grappling.md"]


def test_a_document_not_done_has_no_result_and_unknown_names_fail(tmp_path: Path) -> None:
    bucket = Bucket(tmp_path / "bucket")
    write_topics(tmp_path / "notes")
    bucket.ingest(tmp_path / "notes", ext="text")
    with pytest.raises(NotFound):
        bucket.result("melee/grappling.md")
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        bucket.__class__.__module__  # noqa: B018 - the class loaded
        getattr(bucketdigest, "Nothing")  # noqa: B009
