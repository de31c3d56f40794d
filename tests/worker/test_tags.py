"""Tags name each thing once: no tag inside another, a name rather than a name and a verb."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketdigest.worker.digesters.tags import distinct


def test_a_phrase_and_the_phrases_inside_it_give_one_tag() -> None:
    found = [
        ("BRITISH HUSBANDRY", 0.01),
        ("BRITISH", 0.02),
        ("HUSBANDRY", 0.03),
        ("Doncaster Committee give", 0.04),
        ("Doncaster Committee", 0.05),
        ("Doncaster", 0.06),
        ("turnip crop", 0.07),
        ("crop", 0.08),
        ("bones", 0.09),
    ]
    assert [tag for tag, _ in distinct(found)] == [
        "BRITISH HUSBANDRY",
        "Doncaster Committee",
        "turnip crop",
        "bones",
    ]


words = st.sampled_from(["turnip", "Crop", "bones", "Doncaster", "committee", "give", "ß", "İ"])
phrases = st.lists(words, min_size=1, max_size=3).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(phrases, st.floats(0, 1)), max_size=30))
def test_no_tag_is_inside_another_and_every_tag_was_found(found: list[tuple[str, float]]) -> None:
    tags = distinct(found, top=10)
    assert len(tags) <= 10
    assert set(tags) <= set(found)
    for tag, _ in tags:
        for other, _ in tags:
            if tag != other:
                assert f" {tag.casefold()} " not in f" {other.casefold()} "
