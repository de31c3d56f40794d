"""A small table's keyword ranking in memory (:mod:`bucketdigest.search.held_words`) scores
every row as Lance's full-text index does: the same rows, the same BM25 scores, on any text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import lance
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lance.query import MatchQuery
from lancedb.index import FTS

from bucketdigest.search.held_words import HeldWords, tokenizer_of
from bucketdigest.search.index import FULL_TEXT_INDEX, TERMS
from bucketdigest.search.terms import index_terms

ROOT = Path(__file__).resolve().parents[2]


def _real_paragraphs() -> list[str]:
    """The project's own documentation, paragraph by paragraph: real prose with code, names,
    numbers and punctuation of every kind."""
    texts = []
    for path in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        texts += [p for p in re.split(r"\n\n+", path.read_text(encoding="utf-8")) if len(p) > 40]
    return texts


def _indexed(folder: Path, texts: list[str]) -> Any:
    """A Lance table of ``texts`` (as the index spells them) with the index's full-text
    index, as :mod:`bucketdigest.search.index` builds it."""
    db = lancedb.connect(str(folder))
    rows = pa.table({TERMS: [index_terms(t) for t in texts], "n": list(range(len(texts)))})
    table = db.create_table("chunks", data=rows, mode="overwrite")
    table.create_index(TERMS, config=FTS(with_position=True))
    return lance.dataset(str(folder / "chunks.lance"))


def _held(dataset: Any) -> HeldWords:
    """The table's words in memory, counting the rows its index counts (the searcher ranks
    in memory only then)."""
    read = dataset.to_table(columns=[TERMS])
    stats = dataset.stats.index_stats(FULL_TEXT_INDEX)
    offsets = np.arange(read.num_rows)
    tokenizer = tokenizer_of(stats["indices"][0]["params"])
    held = HeldWords.of(read.column(TERMS).to_pylist(), offsets, tokenizer)
    assert held.documents == stats["indices"][0]["num_docs"]
    return held


def _lances(dataset: Any, query: str, k: int) -> dict[int, float]:
    rows = dataset.to_table(
        columns=["n", "_score"], full_text_query=MatchQuery(index_terms(query), TERMS), limit=k
    ).to_pylist()
    return {row["n"]: row["_score"] for row in rows}


def _agree(held: HeldWords, dataset: Any, query: str, k: int) -> None:
    mine = dict(held.ranked(index_terms(query), k))
    theirs = _lances(dataset, query, k)
    assert len(mine) == len(theirs), query
    # the k-th score may be shared by rows either side of the cut: compare the scores, and
    # the rows scoring clearly more than the last one shown
    assert sorted(mine.values(), reverse=True) == pytest.approx(
        sorted(theirs.values(), reverse=True), rel=1e-5
    )
    last = min(theirs.values(), default=0.0)
    assert {n for n, s in theirs.items() if s > last * (1 + 1e-5)} <= set(mine), query
    for n, score in theirs.items():
        if n in mine:
            assert mine[n] == pytest.approx(score, rel=1e-5), (query, n)


@pytest.fixture(scope="module")
def real_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, HeldWords, list[str]]:
    texts = _real_paragraphs()
    dataset = _indexed(tmp_path_factory.mktemp("held-words"), texts)
    return dataset, _held(dataset), texts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), k=st.integers(1, 40))
def test_real_prose_scores_as_lance_scores_it(
    real_table: tuple[Any, HeldWords, list[str]], data: st.DataObject, k: int
) -> None:
    """Queries of words drawn from the paragraphs (a word asked twice counts twice, stop words
    and stemming as the index has them)."""
    dataset, held, texts = real_table
    words = data.draw(st.sampled_from(texts)).split()
    query = " ".join(data.draw(st.lists(st.sampled_from(words), min_size=1, max_size=5)))
    _agree(held, dataset, query, k)


_ODD_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=60
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        _ODD_TEXT | st.sampled_from(["Ships fire cannon", "naïve CAFÉ", "船が来る"]),
        min_size=1,
        max_size=12,
    ),
    picks=st.lists(st.integers(0, 11), min_size=1, max_size=3),
)
@example(texts=["", "x"], picks=[1])
@example(texts=["Ships fire cannon", "ship ships shipping", "the and of"], picks=[0, 2])
def test_any_text_scores_as_lance_scores_it(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], picks: list[int]
) -> None:
    """Every Unicode oddity a PDF holds, empty rows, rows of stop words alone, CJK."""
    dataset = _indexed(tmp_path_factory.mktemp("odd"), texts)
    held = _held(dataset)
    query = " ".join(texts[p % len(texts)] for p in picks)
    _agree(held, dataset, query, 10)


def test_equal_scores_come_by_offset_and_only_rows_holding_a_word_are_found() -> None:
    held = HeldWords.of(["ship", "cannon", "ship", "ship"], np.array([7, 3, 5, 1]), {})
    assert [offset for offset, _ in held.ranked("ship", 2)] == [1, 5]
    assert [offset for offset, _ in held.ranked("ships", 10)] == [1, 5, 7]
    assert held.ranked("sloop", 10) == [] and held.ranked("ship", 0) == []
