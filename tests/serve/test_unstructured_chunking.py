"""Unstructured's chunking options as its API documents them: chunks within the limits, whole
elements where they fit, titles and pages as section bounds, overlap only where asked, tables
apart, and no request that makes an answer outgrow its document."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bucketdigest.serve import unstructured_chunking
from bucketdigest.serve.unstructured_chunking import ChunkingError, ChunkingOptions, chunked


def _make(kind: str, text: str, seed: str, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "element_id": seed, "text": text, "metadata": metadata}


def _element(text: str, kind: str = "NarrativeText", page: int = 1, **more: Any) -> dict:
    return {
        "type": kind,
        "element_id": text[:8],
        "text": text,
        "metadata": {"page_number": page, **more},
    }


def _texts(elements: list[dict], **options: Any) -> list[str]:
    return [c["text"] for c in chunked(elements, ChunkingOptions(**options), _make)]


def _letters(text: str) -> str:
    return re.sub(r"\s+", "", text)


WORDS = st.text(alphabet=st.sampled_from("ab \n\u00e9\u4e2d"), min_size=1, max_size=300)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(WORDS.filter(str.strip), min_size=1, max_size=12),
    limit=st.integers(1, 120),
    soft=st.none() | st.integers(0, 150),
    by_title=st.booleans(),
)
def test_every_chunk_is_within_the_limit_and_they_hold_every_element_in_order(
    texts: list[str], limit: int, soft: int | None, by_title: bool
) -> None:
    elements = [
        _element(t, "Title" if by_title and i % 3 == 0 else "NarrativeText")
        for i, t in enumerate(texts)
    ]
    strategy = "by_title" if by_title else "basic"
    chunks = _texts(elements, strategy=strategy, max_characters=limit, new_after_n_chars=soft)
    assert all(0 < len(c) <= limit for c in chunks)
    assert _letters("".join(chunks)) == _letters("".join(texts)), "nothing lost, nothing twice"


ELEMENTS = st.lists(
    st.tuples(
        st.sampled_from(["Title", "NarrativeText", "ListItem", "Table"]), WORDS, st.integers(1, 3)
    ),
    max_size=10,
)


@settings(max_examples=150, deadline=None)
@given(
    elements=ELEMENTS,
    limit=st.integers(1, 100),
    soft=st.none() | st.integers(0, 120),
    combine=st.none() | st.integers(0, 120),
    share=st.floats(0, 0.5),
    overlap_all=st.booleans(),
    multipage=st.booleans(),
    strategy=st.sampled_from(["basic", "by_title", "by_page"]),
)
def test_any_options_give_chunks_within_the_limit_that_hold_every_element(
    elements: list[tuple[str, str, int]],
    limit: int,
    soft: int | None,
    combine: int | None,
    share: float,
    overlap_all: bool,
    multipage: bool,
    strategy: str,
) -> None:
    given_elements = [
        _element(text, kind, page, text_as_html=f"<table><tr><td>{text}</td></tr></table>")
        for kind, text, page in elements
    ]
    options = ChunkingOptions(
        strategy, limit, soft, combine, int(limit * share), overlap_all, multipage
    )
    chunks = chunked(given_elements, options, _make)
    assert all(len(c["text"]) <= limit for c in chunks)
    assert all(c["text"] for c in chunks if c["type"] == "CompositeElement")
    shown = _letters("".join(c["text"] for c in chunks))
    assert len(shown) >= len(_letters("".join(t for _, t, _ in elements)))
    tables = [c for c in chunks if c["type"] in ("Table", "TableChunk")]
    assert all(len(c["metadata"]["text_as_html"]) <= limit for c in tables)


@settings(max_examples=100, deadline=None)
@given(text=WORDS.filter(str.strip), limit=st.integers(2, 80), share=st.floats(0, 0.5))
def test_a_split_element_repeats_at_most_overlap_characters_of_each_piece_before(
    text: str, limit: int, share: float
) -> None:
    overlap = int(limit * share)
    pieces = _texts([_element(text)], max_characters=limit, overlap=overlap)
    assert all(0 < len(p) <= limit for p in pieces)
    repeated = len(_letters("".join(pieces))) - len(_letters(text))
    assert 0 <= repeated <= overlap * (len(pieces) - 1)


def test_whole_elements_fill_a_chunk_until_the_soft_limit() -> None:
    elements = [_element("a" * 100), _element("b" * 100), _element("c" * 100)]
    assert _texts(elements, max_characters=500) == ["\n\n".join(e["text"] for e in elements)]
    assert len(_texts(elements, max_characters=500, new_after_n_chars=150)) == 2
    assert len(_texts(elements, max_characters=500, new_after_n_chars=0)) == 3, "one each"
    assert len(_texts(elements, max_characters=201)) == 3, "two and a blank line: 202"


def test_by_title_starts_at_titles_and_joins_short_sections_as_asked() -> None:
    elements = [
        _element("Intro", "Title"),
        _element("x" * 40),
        _element("Rules", "Title", page=2),
        _element("y" * 40, page=2),
    ]
    assert len(_texts(elements, strategy="basic", max_characters=500)) == 1
    assert _texts(elements, strategy="by_title", max_characters=500) == [
        "Intro\n\n" + "x" * 40 + "\n\nRules\n\n" + "y" * 40
    ], "short sections joined (combine_under_n_chars defaults to max_characters)"
    apart = _texts(elements, strategy="by_title", max_characters=500, combine_under_n_chars=0)
    assert apart == ["Intro\n\n" + "x" * 40, "Rules\n\n" + "y" * 40]
    untitled = [_element("p1"), _element("p2", page=2)]
    assert len(_texts(untitled, strategy="by_title", combine_under_n_chars=0)) == 1
    pages = _texts(untitled, strategy="by_title", combine_under_n_chars=0, multipage_sections=False)
    assert pages == ["p1", "p2"]
    assert _texts(elements, strategy="by_page") == ["Intro\n\n" + "x" * 40, "Rules\n\n" + "y" * 40]


def test_a_split_element_cuts_between_words_and_repeats_the_overlap() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert _texts([_element(text)], max_characters=24) == [
        "alpha beta gamma delta",
        "epsilon zeta eta theta",
        "iota kappa",
    ]
    assert _texts([_element(text)], max_characters=24, overlap=10) == [
        "alpha beta gamma delta",
        "mma delta epsilon zeta",
        "ilon zeta eta theta iota",
        "heta iota kappa",
    ], "each piece after the first begins with the last 9 characters and a space"


def test_overlap_all_begins_each_chunk_with_the_end_of_the_one_before() -> None:
    elements = [_element("alpha " * 10), _element("omega " * 10)]
    plain = _texts(elements, max_characters=70, overlap=10)
    assert plain == [e["text"].strip() for e in elements], "whole elements: no overlap"
    both = _texts(elements, max_characters=90, overlap=10, overlap_all=True)
    assert both[1].startswith("pha alpha\n\nomega"), both


def test_a_table_stands_alone_and_a_long_one_is_cut_into_continued_pieces() -> None:
    html = "<table>" + "<tr><td>cell</td></tr>" * 20 + "</table>"
    table = _element("cell " * 20, "Table", text_as_html=html)
    chunks = chunked([_element("before"), table, _element("after")], ChunkingOptions(), _make)
    assert [c["type"] for c in chunks] == ["CompositeElement", "Table", "CompositeElement"]
    pieces = chunked([table], ChunkingOptions(max_characters=100), _make)
    assert {c["type"] for c in pieces} == {"TableChunk"} and len(pieces) == 5
    assert "".join(c["metadata"]["text_as_html"] for c in pieces) == html
    assert [c["metadata"].get("is_continuation", False) for c in pieces] == [False] + [True] * 4


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"max_characters": 0}, "max_characters must be 1 or more, not 0"),
        ({"new_after_n_chars": -1}, "new_after_n_chars must be 0 or more"),
        ({"combine_under_n_chars": -1}, "combine_under_n_chars must be 0 or more"),
        ({"overlap": 300}, "overlap must be at most half of max_characters (250), not 300"),
        (
            {"strategy": "by_similarity"},
            "chunking_strategy is basic, by_title, by_page, not 'by_similarity'",
        ),
    ],
)
def test_options_that_cannot_chunk_are_refused_by_name(options: dict, reason: str) -> None:
    with pytest.raises(ChunkingError, match=re.escape(reason)):
        ChunkingOptions(**options)


def test_a_long_element_is_cut_in_one_pass_and_an_answer_has_a_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = " ".join(f"w{n}" for n in range(400_000))  # 2.7 MB: slicing it per piece is quadratic
    pieces = _texts([_element(text)], max_characters=1000, overlap=100)
    assert len(pieces) > 2500 and pieces[-1].endswith("w399999")
    many = [_element(f"w{n}", "Title" if n % 2 else "NarrativeText") for n in range(50_000)]
    (whole,) = _texts(many, strategy="by_title", max_characters=10**9)  # sections joined
    assert whole.count("\n\n") == 49_999, "a section of many elements is joined once"
    monkeypatch.setattr(unstructured_chunking, "MAX_CHUNKS", 100)
    with pytest.raises(ChunkingError, match="over 100 chunks"):
        _texts([_element(text)], max_characters=1000)
