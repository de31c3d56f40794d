"""Headers are ranked by size over the whole document; a header that is a line of code (the
first line of a listing, set large) is that line, not a heading."""

from __future__ import annotations

from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED, rank_headers


def _header(size: int, text: str) -> str:
    return "#" * (ENCODED + size) + " " + text


def test_sizes_rank_over_the_whole_document() -> None:
    pages = [_header(14, "1 Introduction") + "\n\nText.", _header(11, "1.1 Scope") + "\n\nMore."]
    ranked, headers = rank_headers(pages)
    assert ranked == ["# 1 Introduction\n\nText.", "## 1.1 Scope\n\nMore."]
    assert headers == [[(0, 14)], [(0, 11)]]


def test_a_line_of_code_taken_for_a_header_is_that_line() -> None:
    page = "\n\n".join(
        [
            _header(14, "6.1 Sections"),
            "Sections are entered in the usual way:",
            _header(12, r"`\section{Main section}`"),
            "```\n\\subsection{Subsection}\n```",
            _header(12, r"`\OptionNotUsed`"),  # a command named alone: the term described
            "This causes the current option to be added to the list of unused options.",
        ]
    )
    [ranked], [headers] = rank_headers([page])
    lines = ranked.split("\n\n")
    assert lines[0] == "# 6.1 Sections"
    assert lines[2] == r"`\section{Main section}`"
    assert lines[4] == r"## `\OptionNotUsed`"
    assert [size for _, size in headers] == [14, 12]
