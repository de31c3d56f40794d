"""The static word vectors hybrid search reads meaning by a second time: the model shipped in
the ``wordllama`` wheel, read from its files, as that package reads it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.word_embedding import (
    WORD_DIMENSION,
    WORD_MODEL_PACKAGE,
    WordEmbedder,
    packaged_word_model,
    word_embedder,
)

STEERING = "how do sailors steer a ship in a storm"
HELM = "The helmsman keeps the vessel's bow into the waves when the wind rises."
MARKET = "Bakers sell bread and cheese at the market on Sundays."


def test_the_packaged_model_reads_as_its_own_package_does() -> None:
    from wordllama import WordLlama

    folder = packaged_word_model()[0].parent.parent
    theirs = WordLlama.load(cache_dir=folder, trunc_dim=WORD_DIMENSION, disable_download=True)
    texts = [STEERING, HELM, "Pop. 1,234 — ﬁnal Ünïcode 日本語 \u2028 x"]
    assert np.allclose(word_embedder().encode(texts), theirs.embed(texts, norm=True), atol=1e-6)


def test_a_question_is_closer_to_the_passage_that_means_it_than_to_another() -> None:
    question, meant, other = word_embedder().encode([STEERING, HELM, MARKET])
    assert float(question @ meant) > float(question @ other) + 0.2


@given(st.lists(st.text(max_size=300), max_size=5))
def test_any_text_gives_a_unit_vector_or_none(texts: list[str]) -> None:
    vectors = word_embedder().encode(texts)
    assert vectors.shape == (len(texts), WORD_DIMENSION)
    assert np.isfinite(vectors).all()
    norms = np.linalg.norm(vectors, axis=1)
    assert np.all(np.isclose(norms, 1.0, atol=1e-5) | (norms == 0))


def test_without_the_package_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == WORD_MODEL_PACKAGE else real(name, *a),
    )
    with pytest.raises(ConfigError, match=WORD_MODEL_PACKAGE):
        WordEmbedder()


def test_a_package_without_its_weights_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / WORD_MODEL_PACKAGE).mkdir()
    (tmp_path / WORD_MODEL_PACKAGE / "__init__.py").write_text("")
    monkeypatch.delitem(sys.modules, WORD_MODEL_PACKAGE, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    with pytest.raises(ConfigError, match="reinstall"):
        packaged_word_model()
