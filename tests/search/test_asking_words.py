"""A question's asking words ("how", "which", "does") look nothing up: a passage sharing only
them with the question is no hit, and a question made of nothing else is searched whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import STOPWORDS, any_words
from tests.search.conftest import searched_files

FILES = {
    "faq.md": "# Questions\n\nHow does one join? How does it end? Which is best? Does it?\n",
    "combat.md": "# Combat\n\nGrappling: roll against the defender's strength to hold on.\n",
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> tuple[Searcher, dict[str, str]]:
    return searched_files(tmp_path_factory.mktemp("asking"), FILES)


def test_a_passage_sharing_only_the_asking_words_is_no_keyword_hit(
    searcher: tuple[Searcher, dict[str, str]],
) -> None:
    found, digests = searcher
    hits = found.search(SearchRequest("How does grappling work?", mode=Mode.KEYWORD))
    assert [hit.digest for hit in hits] == [digests["combat.md"]]
    asked_only = found.search(SearchRequest("how does", mode=Mode.KEYWORD))
    assert [hit.digest for hit in asked_only] == [digests["faq.md"]], "nothing else: whole"


@given(
    st.lists(st.sampled_from(sorted(STOPWORDS)), max_size=4),
    st.lists(st.text(alphabet="xyzqk", min_size=3, max_size=6), min_size=1, max_size=3),
)
def test_the_words_looked_up_are_the_querys_own_less_the_asking_ones(
    asking: list[str], said: list[str]
) -> None:
    query = " ".join([*(word.capitalize() + "?" for word in asking), *said])
    assert any_words(query).split() == said
    assert any_words(" ".join(asking)).split() == asking
