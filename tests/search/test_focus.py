"""A hit points at the blocks of its chunk that answer the query."""

from __future__ import annotations

from bucketdigest.search.focus import passage_blocks

BLOCKS = [
    {"id": "b1", "kind": "heading", "text": "Combat"},
    {"id": "b2", "kind": "paragraph", "text": "Initiative decides who acts first each round."},
    {"id": "b3", "kind": "paragraph", "text": "A grappled creature cannot move; it may escape."},
    {"id": "b4", "kind": "table", "text": "Weapon | Damage\nHalberd | d10"},
    {"id": "b5", "kind": "paragraph", "text": "Prone creatures stand up at half their speed."},
    {"id": "b6", "kind": "running", "text": "Grappling rules, page 12"},
    {"id": "b7", "kind": "picture", "text": ""},
]


def _ids(query: str) -> list[str]:
    return [b["id"] for b in passage_blocks(BLOCKS, query)]


def test_the_block_holding_the_words_is_picked_alone() -> None:
    assert _ids("how does grappling work") == ["b3"]
    assert _ids("halberd damage") == ["b4"]


def test_words_spread_over_blocks_pick_each_block_that_adds_some() -> None:
    assert _ids("grappled and prone creatures") == ["b3", "b5"]


def test_a_paragraph_is_preferred_to_a_heading_holding_the_same_words() -> None:
    blocks = [
        {"id": "h", "kind": "heading", "text": "Initiative"},
        {"id": "p", "kind": "paragraph", "text": "Initiative decides who acts first."},
    ]
    assert [b["id"] for b in passage_blocks(blocks, "initiative")] == ["p"]


def test_a_question_in_other_words_picks_nothing_the_hit_keeps_its_chunk() -> None:
    assert _ids("which side starts the battle") == []


def test_running_lines_and_pictures_are_never_the_focus() -> None:
    assert _ids("grappling rules page") == ["b3"]
