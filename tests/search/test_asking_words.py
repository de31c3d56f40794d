"""A question's asking words ("how", "which", "does") look nothing up: a passage sharing only
them with the question is no hit, and a question made of nothing else is searched whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import STOPWORDS, any_words
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from tests.search.conftest import digest_folder

FILES = {
    "faq.md": "# Questions\n\nHow does one join? How does it end? Which is best? Does it?\n",
    "combat.md": "# Combat\n\nGrappling: roll against the defender's strength to hold on.\n",
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> tuple[Searcher, dict[str, str]]:
    root = tmp_path_factory.mktemp("asking")
    for name, text in FILES.items():
        path = root / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    store = LocalStore(root / "bucket")
    digests = digest_folder(store, root / "in")
    settings = StoreSettings(bucket=str(root / "bucket"))
    index_bucket(store, settings)
    return Searcher.open(settings), digests


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
