"""Language tags as a conversion request gives them (docling-serve's ``ocr_lang``: BCP-47, or
Tesseract's own names) made into Tesseract's ``-l`` argument."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared.ocr_languages import (
    UnknownLanguage,
    same_languages,
    tesseract_languages,
)
from bucketdigest.shared.records import DocumentSettings

LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "ja", "ko", "ar", "he", "hi")
LANGUAGES += ("el", "tr", "sv", "fi", "da", "cs", "hu", "ro", "uk", "zh-Hant")


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["en"], "eng"),
        (["fr", "de", "es", "en"], "fra+deu+spa+eng"),
        (["de-DE", "deu", "ger"], "deu"),
        (["zh-Hant", "zh-Hans", "zh"], "chi_tra+chi_sim"),
        (["eng+deu"], "eng+deu"),
        (["en,fr"], "eng+fra"),
        (["sr-Latn"], "srp_latn"),
        ([], None),
        ([" "], None),
    ],
)
def test_tags_become_tesseracts_names(tags: list[str], expected: str | None) -> None:
    assert tesseract_languages(tags) == expected


@pytest.mark.parametrize("tag", ["klingon-xx", "xyz", "mul", "und", "x", "../eng", "eng;rm"])
def test_a_tag_that_names_no_language_is_refused_saying_so(tag: str) -> None:
    with pytest.raises(UnknownLanguage, match="language"):
        tesseract_languages([tag])


@given(st.lists(st.text(max_size=12) | st.sampled_from(LANGUAGES), max_size=24))
def test_whatever_is_given_is_refused_or_a_name_tesseract_and_a_ticket_take(
    tags: list[str],
) -> None:
    try:
        language = tesseract_languages(tags)
    except UnknownLanguage:
        return
    assert DocumentSettings(ocr_language=language).ocr_language == language


def test_the_same_languages_in_another_order_are_the_same() -> None:
    assert same_languages("deu+eng", "eng+deu")
    assert not same_languages("deu", "deu+eng")
    assert not same_languages("eng", None)
