"""A small index's vectors ranked in memory (:mod:`bucketdigest.search.flat`): the same hits as
the index gives, equal rows in the same order, and the index not asked."""

from __future__ import annotations

import itertools
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bucketdigest.search import held as holding
from bucketdigest.search import query
from bucketdigest.search.flat import OFFSET, FlatVectors
from bucketdigest.search.held_words import HeldWords
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Level, Mode, SearchRequest
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore

QUESTIONS = [
    "which books are about ships and naval battles",
    "how do I pin down somebody I am wrestling with",
    "casting spells with mana",
    "what happens when the wheat is brought in before winter",
]
WORDS = ["ships", "mana", "wheat harvest", "winter", "enemy", "the enemy in winter"]
BROAD = "fighting an enemy with weapons, spells or traps"


@pytest.fixture(scope="module")
def settings_of_index(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> StoreSettings:
    bucket = tmp_path_factory.mktemp("flat") / "bucket"
    shutil.copytree(topics_bucket[0], bucket)
    settings = StoreSettings(bucket=str(bucket))
    index_bucket(LocalStore(bucket), settings)
    return settings


def _index_asked(monkeypatch: pytest.MonkeyPatch, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """The searches' reads of the index that ask for ``kind`` (``nearest``,
    ``full_text_query``), as (table, request), from now on."""
    asked: list[tuple[str, dict[str, Any]]] = []
    read_rows = query.read_rows

    def counted(table: Any, lost: Any, **request: Any) -> list[dict[str, Any]]:
        if kind in request:
            asked.append((table.uri, request))
        return read_rows(table, lost, **request)

    monkeypatch.setattr(query, "read_rows", counted)
    return asked


def _shown(hits: list[Any]) -> list[tuple[str, str | None, float]]:
    return [(hit.digest, hit.chunk_id, round(hit.score, 4)) for hit in hits]


@pytest.mark.parametrize("level", list(Level))
@pytest.mark.parametrize("mode", [Mode.SEMANTIC, Mode.HYBRID])
def test_a_small_index_ranks_in_memory_as_the_index_would_without_asking_it(
    settings_of_index: StoreSettings, monkeypatch: pytest.MonkeyPatch, mode: Mode, level: Level
) -> None:
    nearest_asked = _index_asked(monkeypatch, "nearest")
    in_memory = Searcher.open(settings_of_index)
    answers = [in_memory.search(SearchRequest(q, mode=mode, level=level)) for q in QUESTIONS]
    assert not nearest_asked, "the index was asked for neighbours"
    table = in_memory.chunks if level is Level.CHUNKS else in_memory.documents
    assert isinstance(in_memory._held_tables._rows.get(table.uri), FlatVectors)

    monkeypatch.setattr(holding, "VECTOR_INDEX_FROM", 0)
    by_index = Searcher.open(settings_of_index)
    expected = [by_index.search(SearchRequest(q, mode=mode, level=level)) for q in QUESTIONS]
    assert nearest_asked, "the index ranked by meaning"
    assert [_shown(a) for a in answers] == [_shown(e) for e in expected]
    assert all(answers), "every question found something"


@pytest.mark.parametrize("mode", [Mode.KEYWORD, Mode.HYBRID])
def test_a_small_index_ranks_words_in_memory_as_the_index_would_without_asking_it(
    settings_of_index: StoreSettings, monkeypatch: pytest.MonkeyPatch, mode: Mode
) -> None:
    """The passages' keyword ranking (:mod:`.held_words`) gives the hits the full-text index
    gives, scores included; a phrase is the index's to match."""
    words_asked = _index_asked(monkeypatch, "full_text_query")
    asked = [SearchRequest(q, mode=mode) for q in [*QUESTIONS, *WORDS, BROAD, "asdfghjkl"]]
    in_memory = Searcher.open(settings_of_index)
    assert in_memory.hold(timeout=60), "both tables' words held"
    answers = [in_memory.search(request) for request in asked]
    assert not words_asked, "the index was asked for words"

    monkeypatch.setattr(holding, "HELD_COLUMNS_BYTES", 0)  # no terms held: the index ranks
    by_index = Searcher.open(settings_of_index)
    expected = [by_index.search(request) for request in asked]
    assert words_asked, "the index ranked by words"
    assert [_shown(a) for a in answers] == [_shown(e) for e in expected]
    assert sum(bool(a) for a in answers) >= len(asked) - 1, "every question but gibberish found"

    words_asked.clear()
    phrase = in_memory.search(SearchRequest('"pinned creature"', mode=mode))
    assert words_asked and phrase, "a phrase is matched by the index"


def test_searches_do_not_wait_for_the_words_to_be_held(
    settings_of_index: StoreSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Holding a table's words takes a while (Lance's tokenizer): the index answers until
    they are held, the same hits."""
    release = threading.Event()
    of = HeldWords.of

    def slow(*args: Any) -> HeldWords:
        assert release.wait(60)
        return of(*args)

    monkeypatch.setattr(HeldWords, "of", slow)
    searcher = Searcher.open(settings_of_index)
    request = SearchRequest("wheat harvest", mode=Mode.KEYWORD)
    while_building = searcher.search(request)
    assert not searcher.hold(timeout=0), "the words are still being held"
    release.set()
    assert searcher.hold(timeout=60)
    assert _shown(searcher.search(request)) == _shown(while_building) != []


def test_a_filtered_search_is_the_indexs_to_rank(
    settings_of_index: StoreSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index narrows before it ranks (its filter indexes); memory does not rank it."""
    asked = _index_asked(monkeypatch, "nearest")
    searcher = Searcher.open(settings_of_index)
    hits = searcher.search(SearchRequest("ships", mode=Mode.SEMANTIC, file_type="md"))
    filters = [request["filter"] for _, request in asked]
    assert filters and all("md" in f for f in filters), "the index ranked, narrowed"
    assert hits and all(hit.file_type == "md" for hit in hits)


class _TakeCounted:
    """A table whose ``take`` (reading rows by offset) is counted."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.takes = 0

    def take(self, *args: Any, **kwargs: Any) -> Any:
        self.takes += 1
        return self.table.take(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)


def _searcher_counting_takes(settings: StoreSettings) -> tuple[Searcher, _TakeCounted]:
    searcher = Searcher.open(settings)
    counted = _TakeCounted(searcher.chunks)
    searcher.chunks = counted
    return searcher, counted


@pytest.mark.parametrize("mode", list(Mode))
def test_a_small_index_shows_its_hits_from_memory_as_read_from_the_index(
    settings_of_index: StoreSettings, monkeypatch: pytest.MonkeyPatch, mode: Mode
) -> None:
    """A hit's text, page, headings and document fields, and the keyword candidates' words,
    come from the rows held in memory, the same as the index gives them; a table whose
    columns would take too much memory is read from the index."""
    held, held_table = _searcher_counting_takes(settings_of_index)
    asked = [SearchRequest(q, mode=mode, per_document=0) for q in [*QUESTIONS, *WORDS, BROAD]]
    answers = [held.search(request) for request in asked]
    assert held_table.takes == 0, "no row was read from the index by offset"

    monkeypatch.setattr(holding, "HELD_COLUMNS_BYTES", 0)
    read, read_table = _searcher_counting_takes(settings_of_index)
    expected = [read.search(request) for request in asked]
    assert read_table.takes == len(expected), "each search read its hits from the index"

    def whole(hit: Any) -> dict[str, Any]:
        return {**hit.to_dict(), "score": round(hit.score, 4)}

    assert [[whole(h) for h in a] for a in answers] == [[whole(h) for h in e] for e in expected]
    assert any(len(a) > 1 for a in answers), "hits of several rows, in their order"
    assert all(h.snippet.text and h.page for a in answers for h in a)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=1, max_size=40),
    asked=st.lists(st.integers(-3, 3), min_size=3, max_size=3),
    k=st.integers(1, 45),
)
@example(rows=[[-2, 3, 0], [-3, 2, 0]], asked=[-3, 3, 1], k=1)  # equal in exact arithmetic only
def test_nearest_is_every_row_by_closeness_then_offset(
    rows: list[list[int]], asked: list[int], k: int
) -> None:
    """Small integer vectors repeat often: equal rows come in offset order, as the searcher's
    own ranking breaks ties. Distinct rows whose closeness is equal in exact arithmetic may
    differ in the last bit of a float, so they are compared within a rounding error."""
    offsets = list(range(100, 100 + 3 * len(rows), 3))
    read = pa.table(
        {
            OFFSET: pa.array(offsets, pa.uint64()),
            "vector": pa.array(rows, pa.list_(pa.float32(), 3)),
            "digest": [f"d{o}" for o in offsets],
        }
    )
    flat = FlatVectors.of(read, "vector", ["digest"])
    found = flat.nearest(asked, k, ["digest"])

    unit = np.asarray(asked, dtype=np.float64) / (np.linalg.norm(asked) or 1.0)
    vectors = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = dict(zip(offsets, (vectors / np.where(norms == 0, 1.0, norms)) @ unit, strict=True))
    row_of = dict(zip(offsets, map(tuple, rows), strict=True))
    found_offsets = [row[OFFSET] for row in found]

    assert len(found) == min(k, len(rows))
    assert [row["digest"] for row in found] == [f"d{offset}" for offset in found_offsets]
    closeness = [cosine[offset] for offset in found_offsets]
    assert closeness == pytest.approx(sorted(cosine.values(), reverse=True)[: len(found)], abs=1e-5)
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(closeness))
    for place, offset in enumerate(found_offsets):
        equal_before = [o for o in offsets if o < offset and row_of[o] == row_of[offset]]
        assert all(o in found_offsets[:place] for o in equal_before)
    assert [1.0 - row["_distance"] for row in found] == pytest.approx(closeness, abs=1e-5)
