"""Snippets are plain text with the query's words marked, whatever Markdown the passage held."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketdigest.search.snippet import (
    make_snippet,
    query_stems,
    stem,
    words_held,
    words_held_each,
)
from bucketdigest.search.terms import CJK_RUN, cjk_pairs
from bucketdigest.shared.pagetext import readable_text


def test_emphasis_marks_leave_the_snippet_and_the_highlight_lands_on_the_word() -> None:
    text = "The value _c_² is set in **bold**, and _THE POWER OF STORYTELLING_ in italics."
    snippet = make_snippet(text, "power of storytelling")
    assert snippet.text == "The value c² is set in bold, and THE POWER OF STORYTELLING in italics."
    marked = [snippet.text[start:end] for start, end in snippet.highlights]
    assert marked == ["POWER", "STORYTELLING"]


def test_underscores_inside_names_stay() -> None:
    assert make_snippet("call snake_case_name here", "call").text == "call snake_case_name here"


_CELL = st.text(
    alphabet=st.characters(categories=("L", "Nd", "Zs"), exclude_characters="|"),
    min_size=1,
    max_size=12,
).filter(str.strip)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(_CELL, min_size=2, max_size=4), min_size=1, max_size=4),
    words=st.lists(st.from_regex(r"[A-Za-z]{2,9}", fullmatch=True), min_size=1, max_size=5),
)
def test_a_snippet_is_plain_text_with_tables_as_cells_and_no_word_lost(
    rows: list[list[str]], words: list[str]
) -> None:
    width = max(len(r) for r in rows)
    table = ["| " + " | ".join(r + ["x"] * (width - len(r))) + " |" for r in rows]
    table.insert(1, "|" + "---|" * width)
    prose = " ".join(
        f"**{w}**" if i % 3 == 0 else f"_{w}_" if i % 3 == 1 else w for i, w in enumerate(words)
    )
    markdown = f"## Heading\n\n{prose}\n\n" + "\n".join(table) + "\n\nThe end."
    snippet = make_snippet(markdown, words[0], width=10_000).text
    assert "|" not in snippet and "**" not in snippet and "---" not in snippet
    assert "##" not in snippet and not re.search(r"(?<!\w)_\w+_(?!\w)", snippet)
    plain_words = re.findall(r"\w+", snippet)
    for cell in [c for r in rows for c in r] + words:
        for word in re.findall(r"\w+", cell):
            assert word in plain_words, (word, snippet)
    assert "; ".join(" ".join(c.split()) for c in rows[0]) in snippet


def test_a_bold_mark_left_without_its_pair_leaves_the_snippet() -> None:
    text = "AUTHORITY:** 10 U.S.C. 1553; Catherine **, Henry; **bold** and 2 * 3 stay."
    assert make_snippet(text, "authority").text == (
        "AUTHORITY: 10 U.S.C. 1553; Catherine , Henry; bold and 2 * 3 stay."
    )


_WORDS = st.sampled_from(
    ["Rules", "rule", "ruling", "RULED", "spell", "spells", "Spelling", "casting", "cast",
     "the", "of", "ÉCOLE", "école", "naïve", "straße", "魔法", "使い", "x_y", "v2", "a-b"]
)  # fmt: skip


@settings(max_examples=300)
@given(
    query=st.lists(_WORDS, min_size=1, max_size=4).map(" ".join),
    text=st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=30).map(" ".join),
)
def test_the_words_a_text_holds_are_those_its_every_word_stemmed_gives(
    query: str, text: str
) -> None:
    """Only the words that may stem to the query's are looked at, a tenth of the cost of
    stemming each word; what is found must be the same."""
    asked = {s for s in query_stems(query) if not CJK_RUN.match(s)}
    every = {stem(word) for word in re.findall(r"[^\W_]+", text)}
    pairs = {pair for pair in cjk_pairs(query) if pair in text}
    assert words_held(query, text) == (asked & every) | pairs


@settings(max_examples=300)
@given(
    query=st.lists(_WORDS, min_size=1, max_size=4).map(" ".join),
    texts=st.lists(
        st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=8).map(" ".join), max_size=8
    ),
)
def test_the_words_each_block_holds_are_found_in_one_pass_as_one_at_a_time(
    query: str, texts: list[str]
) -> None:
    """A hit's blocks are looked through joined: each must hold what it holds alone (no word
    carried over from its neighbour, none lost at its edges)."""
    assert words_held_each(query, texts) == [words_held(query, text) for text in texts]


_FILLER = [
    "A paragraph of plain words about the harvest and the granary.",
    "| Crop | Yield |\n|---|---|\n| wheat | **12** |\n| barley | _9_ |",
    "- a list item with `code` in it",
    "## A heading on its own line",
]


@settings(max_examples=60)
@given(
    before=st.lists(st.sampled_from(_FILLER), min_size=0, max_size=60),
    after=st.lists(st.sampled_from(_FILLER), min_size=0, max_size=60),
)
def test_a_snippet_of_a_long_chunk_shows_its_matches_as_plain_text(
    before: list[str], after: list[str]
) -> None:
    """A long chunk's snippet is made from the lines around its matches only: still the
    match, highlighted, as plain text, marked as cut where text was left out."""
    text = "\n\n".join([*before, "The **tithe barn** stood by the mill.", *after])
    snippet = make_snippet(text, "tithe barn")
    marked = {snippet.text[s:e].lower() for s, e in snippet.highlights}
    assert {"tithe", "barn"} <= marked
    assert not re.search(r"\*\*|\||^#|`", snippet.text)
    full = " ".join(readable_text(text).split())
    assert snippet.text.startswith("…") or full.startswith(snippet.text[:20])
    assert snippet.text.endswith("…") or full.endswith(snippet.text[-20:])
    assert snippet.text.strip("…") in full


@given(
    places=st.lists(st.integers(0, 599), min_size=1, max_size=40),
    width=st.integers(40, 400),
)
@settings(max_examples=200)
def test_a_snippet_starts_at_the_stretch_holding_the_most_query_words(
    places: list[int], width: int
) -> None:
    """Wherever the query's word stands in a long text, the snippet shows the first place
    from which a stretch of the snippet's width holds the most of its occurrences."""
    words = [f"w{n:04d}" for n in range(600)]
    for place in places:
        words[place] = "ogres"
    text = " ".join(words)
    starts = [n * 6 for n, word in enumerate(words) if word == "ogres"]
    best = max(starts, key=lambda at: sum(1 for s in starts if at <= s < at + width))
    snippet = make_snippet(text, "ogre", width=width)
    cut = len(snippet.text) - len(snippet.text.lstrip("…"))  # the mark of text left out
    shown_from = text.index(snippet.text.strip("…"))
    shown = {(shown_from + s - cut, shown_from + e - cut) for s, e in snippet.highlights}
    assert (best, best + len("ogres")) in shown
