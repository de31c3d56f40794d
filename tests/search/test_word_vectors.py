"""Hybrid search reads meaning twice: the sentence model's vectors and the passages' static
word vectors (:mod:`bucketdigest.shared.word_embedding`), which the index makes from each
chunk's headings and text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bucketdigest.search import fusion
from bucketdigest.search import held as holding
from bucketdigest.search.index import WORD_VECTOR
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import matched_text
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.word_embedding import word_embedder
from tests.search.conftest import searched_files

RULES = {
    "pier.md": "# Harbour\n\nHarbour rules: ships dock at the pier, sailors tie ropes and the "
    "tide lifts the hulls.\n",
    "market.md": "# Market\n\nHarbour rules for the market: bakers sell bread and cheese at the "
    "harbour on Sundays.\n",
    "duties.md": "# Duties\n\nHarbour rules on taxes: the clerk records duties paid on every "
    "harbour crossing.\n",
    "choir.md": "# Choir\n\nHarbour rules of the choir: singers rehearse hymns in the harbour "
    "chapel at dawn.\n",
}
QUESTION = "harbour rules for money"
"""Every passage holds "harbour rules"; the one about taxes and duties answers, in words the
question does not use. The sentence model alone puts the pier first."""


@pytest.fixture(scope="module")
def harbour_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The bucket's folder, and each document's name by its hash."""
    root = tmp_path_factory.mktemp("words")
    _, digests = searched_files(root, RULES)
    return root / "bucket", {digest: name.rsplit("/", 1)[-1] for name, digest in digests.items()}


@pytest.fixture
def harbour(harbour_root: tuple[Path, dict[str, str]]) -> tuple[Searcher, dict[str, str]]:
    bucket, names = harbour_root
    return Searcher.open(StoreSettings(bucket=str(bucket))), names


def test_the_index_holds_each_chunks_word_vector_of_its_headings_and_text(
    harbour: tuple[Searcher, dict[str, str]],
) -> None:
    searcher, _ = harbour
    rows = searcher.chunks.to_table(columns=["text", "headings", WORD_VECTOR]).to_pylist()
    assert len(rows) == len(RULES)
    made = word_embedder().encode([matched_text(r["text"], r["headings"]) for r in rows])
    held = np.array([r[WORD_VECTOR] for r in rows], dtype=np.float32)
    assert np.allclose(held, made, atol=1e-6)
    assert np.allclose(np.linalg.norm(held, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("file_type", "held"),
    [(None, True), ("md", True), (None, False), ("md", False)],
    ids=["held", "held-filtered", "index-ranked", "index-ranked-filtered"],
)
def test_a_question_in_other_words_finds_the_passage_its_words_mean(
    harbour_root: tuple[Path, dict[str, str]],
    file_type: str | None,
    held: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket, names = harbour_root
    if not held:  # no table held in memory: the word vectors are read from the index
        monkeypatch.setattr(holding, "VECTOR_INDEX_FROM", 0)
    taken = _columns_taken(monkeypatch)
    searcher = Searcher.open(StoreSettings(bucket=str(bucket)))
    request = SearchRequest(QUESTION, mode=Mode.HYBRID, file_type=file_type)
    assert [names[h.digest] for h in searcher.search(request)][:2] == ["duties.md", "pier.md"]
    read_by_offset = [WORD_VECTOR] in taken
    assert read_by_offset is not held, "held in memory, or read once by offset"
    monkeypatch.setattr(fusion, "WORD_WEIGHT", 0.0)
    assert names[searcher.search(request)[0].digest] == "pier.md", "without the word vectors"
    monkeypatch.setattr(fusion, "WORD_WEIGHT", 0.0)
    assert names[searcher.search(request)[0].digest] == "pier.md", "without the word vectors"


def test_a_query_a_passage_holds_whole_is_left_to_its_words(
    harbour: tuple[Searcher, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    searcher, names = harbour
    request = SearchRequest("harbour rules", mode=Mode.HYBRID)  # every passage holds them
    ranked = [names[h.digest] for h in searcher.search(request)]
    assert len(ranked) == len(RULES)
    monkeypatch.setattr(fusion, "WORD_WEIGHT", 10.0)
    assert [names[h.digest] for h in searcher.search(request)] == ranked


def _columns_taken(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The columns each ``take`` of a Lance table asked for, from now on."""
    from lance.dataset import LanceDataset

    asked: list[list[str]] = []
    real = LanceDataset.take

    def take(self: LanceDataset, indices: Any, columns: Any = None, **kwargs: Any) -> Any:
        asked.append(list(columns or []))
        return real(self, indices, columns=columns, **kwargs)

    monkeypatch.setattr(LanceDataset, "take", take)
    return asked
