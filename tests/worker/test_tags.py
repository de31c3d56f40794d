"""Tags name each thing once: no tag inside another, a name rather than a name and a verb; no tag
says a word twice or holds a whole unspaced Chinese or Japanese sentence."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketdigest.worker.digesters.tags import distinct, document_tags


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
        assert len(set(tag.casefold().split())) == len(tag.split())
        for other, _ in tags:
            if tag != other:
                assert f" {tag.casefold()} " not in f" {other.casefold()} "


def test_a_phrase_saying_a_word_twice_or_an_unspaced_sentence_is_no_tag() -> None:
    """What YAKE made of real documents: a heading read with its running head, a list of
    names, a Japanese sentence (its words are not spaced) taken for one word."""
    found = [
        ("Contents Contents Abstract", 0.01),
        ("Haruki EJIRI Haruki", 0.02),
        ("パッケ ー ジは日本語による見出し語と日付を出力するためのマクロを定義しています", 0.03),
        ("font encodings", 0.04),
        ("日本語 パッケージ", 0.05),
        ("Textverarbeitungsprogramm", 0.06),
    ]
    assert [tag for tag, _ in distinct(found)] == [
        "font encodings",
        "日本語 パッケージ",
        "Textverarbeitungsprogramm",
    ]


def test_tags_come_from_the_body_not_from_table_headers_or_captions() -> None:
    body = (
        "The harbour of Vellmar shelters the grain fleet through the winter storms. "
        "Each spring the grain fleet sails south to the salt markets, where merchants weigh "
        "the cargo and pay the harbour dues in silver."
    )
    table = "| Bytes | Docs | Tokens |\n|---|---|---|\n| 12 | 3 | 40 |\n| 7 | 1 | 22 |"
    pages = [
        f"## The grain fleet\n\n{body}\n\n{table}\n\nTable {n}: Bytes Docs Tokens per source\n"
        for n in range(1, 7)
    ]
    tags = [tag.casefold() for tag, _ in document_tags(pages)]
    assert tags and any("grain fleet" in tag for tag in tags[:5]), tags
    header = {"bytes", "docs", "tokens"}
    assert not [tag for tag in tags if set(tag.split()) <= header], tags


def test_a_document_of_tables_alone_is_tagged_from_its_rows_not_its_header() -> None:
    rows = "\n".join(f"| Turnip {n} | Swede harvest | Mangold clamp |" for n in range(30))
    page = f"| Crop | Yield | Field |\n|---|---|---|\n{rows}\n"
    tags = [tag.casefold() for tag, _ in document_tags([page])]
    assert tags, "little body: the rows are read"
    assert not [tag for tag in tags if set(tag.split()) <= {"crop", "yield", "field"}], tags


def test_a_form_whose_labels_repeat_in_its_rows_gets_no_tag_of_labels_alone() -> None:
    """A form's column labels (its header row) come again in its rows ("Check", "Submit"):
    the rows are read, but no tag is made of the header's words alone."""
    rows = "\n".join(
        f"| Check {n} | Submit the granary ledger | Mangold clamp at Vellmar |" for n in range(30)
    )
    page = f"| Check | Submit | Field |\n|---|---|---|\n{rows}\n"
    tags = [tag.casefold() for tag, _ in document_tags([page])]
    assert tags, "little body: the rows are read"
    assert not [tag for tag in tags if set(tag.split()) <= {"check", "submit", "field"}], tags
    assert any("granary" in tag or "mangold" in tag for tag in tags), tags
