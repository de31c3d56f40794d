"""Plain text from a page's Markdown: the patterns that strip its syntax are written to fail
fast at each position (a search runs them over every snippet), and must take away exactly
what their plain spelling takes away, whatever the page holds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketdigest.shared import pagetext

PLAIN_SPELLINGS = {
    "_MARKS": r"(?<=[^\W\d_])[⁰¹²³⁴⁵⁶⁷⁸⁹]+",
    "_EMPHASIS": (
        r"(\*\*|\*|`|(?<!\w)__|(?<!\w)_)(?=\S)(.+?)(?<=\S)\1(?![^\W\d_⁰¹²³⁴⁵⁶⁷⁸⁹])(?!_)"
    ),
    "_MARK_ON_SYMBOL": r"[*_](?=[^\x00-\x7f\w\s])|(?<=[^\x00-\x7f\w\s])[*_]",
}
"""Each pattern as it reads: a lookbehind first, tried at every position of the text."""

_MARKDOWN = st.lists(
    st.sampled_from(
        [*"aZé9³¹²⁴_*`|-# \n\t.∗†⟨⟩−ε+", "**", "__", "Smith", "x²", "3¹", "_t_³", "日本", "١٢"]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=500)
@given(text=_MARKDOWN)
def test_each_fast_pattern_finds_what_its_plain_spelling_finds(text: str) -> None:
    for name, spelling in PLAIN_SPELLINGS.items():
        fast = getattr(pagetext, name)
        assert [m.span() for m in fast.finditer(text)] == [
            m.span() for m in re.finditer(spelling, text)
        ], name


def test_footnote_marks_and_emphasis_leave_a_snippet() -> None:
    text = "As Smith¹² shows, _t_³ grows; 3¹ stays and `code` is **text**."
    assert pagetext.readable_text(text) == "As Smith shows, t³ grows; 3¹ stays and code is text."


def test_italic_marks_on_symbols_against_words_leave_headings_and_snippets() -> None:
    """pymupdf4llm sets a footnote's star or a docstrip guard's brackets in italics against
    the word beside them; CommonMark prints such marks, and so did headings and snippets."""
    cases = {
        "Standard Document Classes for LaTeX version 2e_∗_": (
            "Standard Document Classes for LaTeX version 2e∗"
        ),
        "Michael Shell_∗†_": "Michael Shell∗†",
        "2.4 256_−_ glyph encodings": "2.4 256− glyph encodings",
        "74 _⟨∗_article_⟩_ 75": "74 ⟨∗article⟩ 75",
        "52 _⟨_!article_⟩_ 53": "52 ⟨!article⟩ 53",
        "kernel LATEX2_ε_ kernel": "kernel LATEX2_ε_ kernel",
        "code keeps x_+_y and image_width": "code keeps x_+_y and image_width",
    }
    for markdown, plain in cases.items():
        assert pagetext.plain_text(markdown) == plain, markdown
