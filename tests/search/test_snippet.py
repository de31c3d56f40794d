"""Snippets are plain text with the query's words marked, whatever Markdown the passage held."""

from __future__ import annotations

from bucketdigest.search.snippet import make_snippet


def test_emphasis_marks_leave_the_snippet_and_the_highlight_lands_on_the_word() -> None:
    text = "The value _c_² is set in **bold**, and _THE POWER OF STORYTELLING_ in italics."
    snippet = make_snippet(text, "power of storytelling")
    assert snippet.text == "The value c² is set in bold, and THE POWER OF STORYTELLING in italics."
    marked = [snippet.text[start:end] for start, end in snippet.highlights]
    assert marked == ["POWER", "STORYTELLING"]


def test_underscores_inside_names_stay() -> None:
    assert make_snippet("call snake_case_name here", "call").text == "call snake_case_name here"
