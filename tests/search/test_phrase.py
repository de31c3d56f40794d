"""A pasted span or a heading finds the passage that says it in its order: every passage
holding the same words ranks alike by the words (BM25) and close by the meaning, so hybrid
search puts the one holding them one after another first."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.terms import phrase_pattern
from tests.search.conftest import searched_files

SPAN = "the harbour pilot signals the tug before the ferry turns"
SHUFFLED = (
    "Before the ferry signals, the tug turns; the pilot of the harbour watches the pilot "
    "boat, the tug and the ferry, and signals again before the harbour closes."
)
"""Every word of :data:`SPAN`, most of them more often, none in its order."""

WORDS = st.text(alphabet=st.characters(categories=["Ll", "Lu", "Nd"]), min_size=1, max_size=8)
BETWEEN = st.text(
    alphabet=st.sampled_from(" \n\t-\u2013\u2014,.;:!?()'\"/*#|"), min_size=1, max_size=4
)


@pytest.fixture(scope="module")
def harbour(tmp_path_factory: pytest.TempPathFactory) -> tuple[Searcher, dict[str, str]]:
    root = tmp_path_factory.mktemp("phrase")
    broken = SPAN.replace("pilot ", "pilot\n")  # a line end between two of its words
    files = {
        "rules/shuffled.md": f"# Harbour traffic\n\n{SHUFFLED}\n",
        "rules/spoken.md": f"# Signals\n\nAt dusk {broken}, as the rules require.\n",
        "rules/other.md": "# Cargo\n\nContainers are stacked six high on the quay.\n",
    }
    return searched_files(root, files)


def test_a_pasted_span_finds_the_passage_saying_it_in_its_order_first(
    harbour: tuple[Searcher, dict[str, str]],
) -> None:
    searcher, digests = harbour
    keyword = searcher.search(SearchRequest(SPAN, mode=Mode.KEYWORD))
    assert keyword[0].digest == digests["rules/shuffled.md"], "more of the words, more BM25"
    hybrid = searcher.search(SearchRequest(SPAN, mode=Mode.HYBRID))
    assert [h.digest for h in hybrid[:2]] == [
        digests["rules/spoken.md"],
        digests["rules/shuffled.md"],
    ]


@given(st.lists(WORDS, min_size=2, max_size=6), st.data())
def test_the_words_in_their_order_match_whatever_stands_between_them(
    words: list[str], data: st.DataObject
) -> None:
    query = " ".join(words)
    pattern = phrase_pattern(query)
    assert pattern is not None
    joined = "".join(word + data.draw(BETWEEN) for word in words[:-1]) + words[-1]
    cased = "".join(_other_case(c) for c in joined)
    text = f"Before it: {cased} (after it)"
    assert pattern.search(text) is not None
    assert pattern.search(f"x{joined}") is None, "a word glued to the first is another word"
    if len(set(words)) == len(words):
        assert pattern.search(" ".join(reversed(words))) is None


def _other_case(char: str) -> str:
    """``char`` in its other case where that is one letter of the same letter (not U+0149,
    whose capital is two characters, nor the dotless i, whose capital is the dotted one's)."""
    other = char.swapcase()
    return other if len(other) == 1 and other.lower() == char.lower() else char


def test_one_word_or_cjk_is_no_phrase() -> None:
    assert phrase_pattern("valve") is None
    assert phrase_pattern("  valve, ") is None
    assert phrase_pattern("港口 引航员") is None
    assert phrase_pattern("coolant valve") is not None
