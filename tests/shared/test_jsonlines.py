"""JSON lines split on ``\\n`` alone: text holding U+2028, U+2029, U+0085 or any other line
boundary that ``str.splitlines`` knows reads back whole, and searches over it answer JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.cli.main import cli
from bucketdigest.shared.jsonlines import dumps_lines, loads_lines

records = st.lists(
    st.dictionaries(st.text(max_size=8), st.one_of(st.text(), st.integers(), st.none())),
    max_size=6,
)


@given(records)
def test_any_records_read_back_as_written(written: list[dict]) -> None:
    data = dumps_lines(written)
    assert data.count(b"\n") == len(written)
    assert loads_lines(data) == written
    assert loads_lines(data.decode()) == written


@given(
    st.text(
        alphabet=st.sampled_from(["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\r", "a"])
    )
)
def test_every_unicode_line_boundary_stays_inside_its_record(text: str) -> None:
    assert loads_lines(dumps_lines([{"text": text}, {"text": text}])) == [{"text": text}] * 2


def test_a_search_over_text_with_unicode_line_separators_answers_json(tmp_path: Path) -> None:
    notes = tmp_path / "in"
    notes.mkdir()
    (notes / "odd.md").write_text(
        "# Odd Lines\n\nThe harbour pilot\u2028guides every galleon past the reef.\x85 "
        "Lanterns\u2029burn at the breakwater all night.\n",
        encoding="utf-8",
    )
    bucket = str(tmp_path / "bucket")
    runner = CliRunner()
    ran = runner.invoke(cli, ["run", str(notes), "--bucket", bucket, "--ext", "all"])
    assert ran.exit_code == 0, ran.output
    found = runner.invoke(cli, ["search", "harbour pilot galleon", "--bucket", bucket, "--json"])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert "pilot guides every galleon" in hits[0]["snippet"], "a separator reads as a space"
