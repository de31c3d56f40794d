"""The steps after the converter never fail a document: whatever a page holds, they return
text, and a step that raises on a page costs only that page."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bucketdigest.worker.digesters.doc_to_markdown import after_converter
from bucketdigest.worker.digesters.doc_to_markdown.after_converter import finished
from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED, rank_headers
from bucketdigest.worker.digesters.doc_to_markdown.running import split_running
from bucketdigest.worker.digesters.doc_to_markdown.tables import tables_as_markdown
from bucketdigest.worker.digesters.doc_to_markdown.tidy import lexicon, tidy

# Every code point, lone surrogates and control characters included.
any_text = st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=300)
markup = st.sampled_from(
    [
        "<br>",
        "<sup>",
        "</sup>",
        "<sub>2</sub>",
        "**",
        "~~",
        "_",
        "`",
        "\n",
        "\n\n",
        "-",
        "- ",
        "ß",
        "ﬁ",
        "İ",
        "\x00",
        "\x0b",
        "\ud800",
        "| ",
        "|---|",
        "```\n",
        "# ",
        "#" * (ENCODED + 12) + " ",
        "<!--running header--> ",
        "<!--running footer--> ",
        "<!-- Start of picture text -->",
        "<!-- End of picture text -->",
        "<table>",
        "<tr>",
        "<td>",
        '<td rowspan="2">',
        "</td>",
        "</tr>",
        "</table>",
    ]
)
odd = st.sampled_from(
    ["\x00", "\x01", "\x0b", "\x1f", "\x7f", "\ud800", "\udfff", "\ufffe", "\u200b", "\u202e"]
)
words = st.sampled_from(
    ["Straße", "Stra-sse", "ﬁle", "fi-le", "İstanbul", "i-stanbul", "exam", "ple"]
)
pieces = st.one_of(any_text, markup, odd, words)
pages_text = st.lists(pieces, max_size=40).map("".join)
tables = st.lists(
    st.lists(st.lists(pieces, max_size=6).map("".join), min_size=1, max_size=4),
    min_size=1,
    max_size=4,
).map(
    lambda rows: (
        "<table>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        + "</table>"
    )
)

fuzz = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(st.lists(pages_text, min_size=1, max_size=4))
def test_tidy_returns_text_for_any_unicode(pages: list[str]) -> None:
    known = lexicon(pages)
    for page in pages:
        assert isinstance(tidy(page, known), str)


@fuzz
@given(tables)
def test_tables_of_any_text_become_text(table: str) -> None:
    assert isinstance(tables_as_markdown(f"before\n{table}\nafter"), str)


box_text = st.text(alphabet=st.characters(exclude_characters="|\n\r"), max_size=40).filter(
    # a backslash at the end would escape the cell's closing pipe; dashes alone are a rule
    lambda text: not text.endswith("\\") and not re.fullmatch(r"\s*:?-{3,}:?\s*", text)
)


def _as_paragraph(text: str) -> str:
    """A box's text as a paragraph of its own: the mark that would start a heading or a
    quote escaped."""
    return ("\\" if text[:1] in ("#", ">") else "") + text


@given(st.lists(box_text, min_size=1, max_size=6))
def test_a_table_of_one_column_becomes_a_paragraph_for_each_of_its_cells(cells: list[str]) -> None:
    """Boxes the converter gave as a table of one column (a header row, its rule, rows of one
    cell) read as their text, a paragraph each; an empty box goes."""
    rows = [f"|{cells[0]}|", "|---|", *(f"|{cell}|" for cell in cells[1:])]
    table = "\n".join(rows)
    boxes = [_as_paragraph(cell.strip()) for cell in cells if cell.strip()]
    expected = "\n\n".join(["before", *boxes, "after"]) if boxes else "before\n\n\nafter"
    assert tables_as_markdown(f"before\n\n{table}\n\nafter") == expected


@pytest.mark.parametrize("box", ["# 1", "#Title", "> quoted", ">>"])
def test_a_box_whose_text_looks_like_a_heading_or_a_quote_reads_as_that_text(box: str) -> None:
    html = MarkdownIt("commonmark").render(tables_as_markdown(f"|{box}|\n|---|"))
    assert html == f"<p>{box.replace('>', '&gt;')}</p>\n"


def test_a_numbered_box_keeps_its_number_as_printed() -> None:
    """A form's field "7. GRADE/RANK AT DISCHARGE" keeps its text (a quote of it finds it);
    rendered, it is the item 7 it looks like."""
    markdown = tables_as_markdown("|7. GRADE/RANK AT DISCHARGE|\n|---|\n|8. HIGHEST GRADE|")
    assert markdown == "7. GRADE/RANK AT DISCHARGE\n\n8. HIGHEST GRADE"


@given(st.lists(box_text, min_size=2, max_size=6))
def test_a_table_of_one_row_becomes_its_cells_on_one_line(cells: list[str]) -> None:
    """Boxes side by side with nothing under them (a line of code or an equation and its
    number, cut at their gaps) read as the line: the cells joined by a space."""
    table = "|" + "|".join(cells) + "|\n|" + "|".join("---" for _ in cells) + "|"
    line = _as_paragraph(" ".join(cell.strip() for cell in cells if cell.strip()))
    expected = f"before\n\n{line}\n\nafter" if line else "before\n\n\nafter"
    assert tables_as_markdown(f"before\n\n{table}\n\nafter") == expected


def test_a_line_of_code_cut_into_cells_is_the_line() -> None:
    table = "|sudo apt remove --purge|<package name>|\n|---|---|"
    assert tables_as_markdown(table) == "sudo apt remove --purge <package name>"


def test_a_table_of_several_columns_and_rows_or_rules_stays_a_table() -> None:
    for table in ("|A|B|\n|---|---|\n|1|2|", "|A|\n|---|\n|B|\n|---|", "|A|\n|---|\n|B|C|"):
        assert tables_as_markdown(f"before\n\n{table}\n\nafter") == f"before\n\n{table}\n\nafter"


@fuzz
@given(st.lists(pages_text, min_size=1, max_size=5), st.booleans())
def test_running_lines_and_header_levels_take_any_pages(pages: list[str], keep: bool) -> None:
    bodies, running = split_running(pages, keep)
    ranked, headers = rank_headers(bodies)
    assert len(ranked) == len(running) == len(headers) == len(pages)
    assert all(isinstance(page, str) for page in ranked)


@fuzz
@given(st.lists(st.one_of(pages_text, tables), min_size=1, max_size=5))
def test_finishing_any_pages_gives_every_page_back(pages: list[str]) -> None:
    problems: list[str] = []
    done = finished(pages, keep_headers=False, problems=problems)
    assert len(done.pages) == len(done.running) == len(done.headers) == len(pages)
    assert all(isinstance(page, str) for page in done.pages)


def test_a_compound_whose_letters_casefold_to_more_letters_is_left_as_written() -> None:
    """``Straße`` casefolds to ``strasse``: the compound ``stra-sse`` has a letter more than
    the word, which made the hyphen restorer raise StopIteration on a real PDF."""
    pages = ["the Stra-sse sign", "the Straße sign"]
    assert tidy(pages[1], lexicon(pages)) == "the Straße sign"


def test_a_table_cell_holding_a_control_character_becomes_a_markdown_cell() -> None:
    """lxml refuses control characters in a tree ("All strings must be XML compatible")."""
    table = (
        "<table><tr><th>Unit</th><th>Cost</th></tr>"
        "<tr><td>Knight<br>\x0bmounted</td><td>3</td></tr></table>"
    )
    assert tables_as_markdown(table) == "|Unit|Cost|\n|---|---|\n|Knight mounted|3|"


def test_a_step_that_raises_on_one_page_costs_that_page_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_tidy = after_converter.tidy

    def tidy_failing_on_poison(page: str, known: object) -> str:
        if "poison" in page:
            raise StopIteration
        return real_tidy(page, known)  # type: ignore[arg-type]

    monkeypatch.setattr(after_converter, "tidy", tidy_failing_on_poison)
    problems: list[str] = []
    pages = ["a **bold** start", "poison <sup>2</sup> page", "another <u>page</u>"]
    done = finished(pages, keep_headers=False, problems=problems)
    assert done.pages == ("a **bold** start", "poison <sup>2</sup> page", "another page")
    assert problems == [
        "page 2: tidy failed (StopIteration: ); the page is left as it was before that step"
    ]


def test_a_page_the_running_line_step_fails_on_keeps_its_text_without_marks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_split = after_converter.split_running

    def split_failing_on_poison(pages: list[str], keep: bool = False) -> tuple:
        if any("poison" in page for page in pages):
            raise ValueError("odd page")
        return real_split(pages, keep)

    monkeypatch.setattr(after_converter, "split_running", split_failing_on_poison)
    problems: list[str] = []
    pages = [
        "<!--running header--> Journal 1\n\nBody one.",
        "<!--running header--> Journal 2\n\npoison body.",
        "<!--running header--> Journal 3\n\nBody three.",
    ]
    done = finished(pages, keep_headers=False, problems=problems)
    assert done.pages[0] == "Body one." and done.pages[2] == "Body three."
    assert done.running[0].header == ["Journal 1"]
    assert done.pages[1] == "Journal 2\n\npoison body."
    assert problems == [
        "page 2: running lines failed (ValueError: odd page); "
        "the page is left as it was before that step"
    ]


def test_a_word_space_fix_that_raises_leaves_the_page_as_mupdf_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pymupdf

    from bucketdigest.worker.digesters.doc_to_markdown import word_spaces

    def broken_fix(*args: object, **kwargs: object) -> None:
        raise IndexError("glyph out of range")

    monkeypatch.setattr(word_spaces, "spaced_dict", broken_fix)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Knights move first.")
    with word_spaces.spaced_lines() as failed:
        blocks = doc[0].get_text("dict")["blocks"]
    spans = [s["text"] for b in blocks for line in b["lines"] for s in line["spans"]]
    assert "".join(spans) == "Knights move first."
    assert failed == [
        "page 1: the word-space and right-to-left fix failed (IndexError: glyph out of range); "
        "its lines are as MuPDF reads them"
    ]
