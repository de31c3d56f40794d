"""The converter's markup becomes Markdown a reader can trust (examples from real pages)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.tidy import lexicon, run_on_paragraphs, tidy


def test_picture_text_becomes_a_quote_of_joined_lines_not_an_html_comment() -> None:
    page = (
        "![](images/a.png)\n\n<!-- Start of picture text -->\n"
        "Figure 3<br>Mean yield by year<br><!-- End of picture text -->\n\nNext paragraph."
    )
    tidied = tidy(page)
    assert "<!--" not in tidied and "<br>" not in tidied
    assert "> Figure 3 Mean yield by year\n" in tidied, "lines joined into one quote paragraph"
    assert plain_text(tidied).split() == [
        "Figure",
        "3",
        "Mean",
        "yield",
        "by",
        "year",
        "Next",
        "paragraph.",
    ]


def test_picture_text_broken_over_lines_reads_as_sentences() -> None:
    page = (
        "<!-- Start of picture text -->\nThe yield of turnips rose ten-<br>fold once bones were<br>"
        "used.<br><!-- End of picture text -->"
    )
    assert tidy(page, lexicon([page, "tenfold"])) == (
        "> The yield of turnips rose tenfold once bones were used.\n"
    )


def test_line_breaks_in_table_cells_are_spaces_and_header_cells_lose_their_bold() -> None:
    table = "|**Unit**|**Cost**|\n|---|---|\n|**Knight**<br>mounted|3|"
    assert tidy(table) == "|Unit|Cost|\n|---|---|\n|**Knight** mounted|3|"


def test_headings_carry_no_bold() -> None:
    assert tidy("# **Rulebook 3**") == "# Rulebook 3"
    heading = "### **1.1 Writing classes for L**<sup>**A**</sup> **TEX 2** **_ε_**"
    assert tidy(heading) == "### 1.1 Writing classes for LaTeX 2 _ε_"


def test_super_and_subscripts_become_characters_or_inline_text() -> None:
    assert tidy("an area of 4 m<sup>2</sup> and H<sub>2</sub>O") == "an area of 4 m² and H₂O"
    assert tidy("the 1<sup>st</sup> player") == "the 1st player"
    assert tidy("128<sup>+</sup> glyphs, 124_._3 m") == "128+ glyphs, 124.3 m"
    assert tidy("in L<sup>A</sup> TEX 2.09 and L<sup>A</sup>TEX") == "in LaTeX 2.09 and LaTeX"
    assert tidy("as shown by Smith<sup>12</sup>.") == "as shown by Smith¹².", "footnote mark"
    assert plain_text(tidy("as shown by Smith<sup>12</sup>.")) == "as shown by Smith."


def test_a_symbol_in_italics_against_a_word_loses_marks_commonmark_would_print() -> None:
    assert tidy("# The graphpap package_∗_") == "# The graphpap package∗"
    assert tidy("### Michael Shell_∗†_") == "### Michael Shell∗†"
    assert tidy("hat einen besonderen Namen: Σ_∗_.") == "hat einen besonderen Namen: Σ∗."
    for kept in ("_see the word_∗_ here", "x_+_y", "a _∗_ alone"):
        assert tidy(kept) == kept, "marks that may close an emphasis, or are not a symbol's"
    assert tidy("the `code_∗_` span") == "the code_∗_ span", "code's marks, printed as they stand"


def test_characters_are_those_the_page_prints() -> None:
    """Ligatures kept in table cells, the Symbol font's bracket pieces in the private use
    area, and control characters a font without Unicode gives: none is what a reader sees,
    and ``splitlines`` broke lines at some of them."""
    assert tidy("|Press speci\ufb01cations|e\ufb00ect|") == "|Press specifications|effect|"
    assert tidy("\uf8f1 f(x) = x \uf8f2 \uf8f3") == "⎧ f(x) = x ⎨ ⎩"
    tidied = tidy("symbols like \u2018\x1aoo\u2019 and \x85 and\x0bthis\n```\nc\x1c\n```")
    assert tidied == "symbols like \u2018\ufffdoo\u2019 and \ufffd and\ufffdthis\n```\nc\ufffd\n```"
    assert len(tidied.splitlines()) == 4


def test_the_latex_logo_in_pieces_is_one_word_again() -> None:
    """MuPDF reads the logo's raised A as a word of its own or in a style of its own; a
    search for LaTeX found none of these."""
    cases = {
        "as they were not present in LA TEX2.09.": "as they were not present in LaTeX2.09.",
        "run pdfLA TEX or LuaLA TEX, not XƎLA TEX": "run pdfLaTeX or LuaLaTeX, not XƎLaTeX",
        "the L__A__TEX Companion and L__A_ _TEX3": "the LaTeX Companion and LaTeX3",
        "作为 L A TEX Studio 的": "作为 LaTeX Studio 的",
        "the LA TEX2 _ε_ kernel and the LATEX2_ε_ kernel": (
            "the LaTeX2ε kernel and the LATEX2ε kernel"
        ),
        "(u)pLA TEX2e mode": "(u)pLaTeX2e mode",
        "# L<sup>A</sup> TEX2 _ε_ font selection": "# LaTeX2ε font selection",
        "pdfLA TEX에서만 유의미하다": "pdfLaTeX에서만 유의미하다",
        "解决LATEX2_ε_版本": "解决LATEX2ε版本",
    }
    for converted, tidied in cases.items():
        assert tidy(converted) == tidied, converted
    for kept in ("NATURAL RUBBER LATEX", "LA TEXTURA", "LEVEL A TEXT", "LaTeX 2 _ε_"):
        assert tidy(kept) == kept


def test_underline_highlight_and_strike_marks_go_and_their_text_stays() -> None:
    page = "see <u>the rules</u> and <mark>this</mark>; ~~old text~~ stays"
    assert tidy(page) == "see the rules and this; old text stays"


def test_tex_quote_pairs_and_separate_accents_are_composed() -> None:
    assert tidy("‘‘corporate social responsibility’’") == "“corporate social responsibility”"
    assert tidy("J´an Min´aˇc and Fran¸cois") == "Ján Mináč and François"
    assert tidy("´Etienne na¨ıve") == "Étienne naïve"
    assert tidy("it´s John´s") == "it´s John´s", "an acute used as an apostrophe stays"
    assert tidy("`OT1,T1 ´ (acute)`") == "OT1,T1 ´ (acute)", "an accent alone stays"


def test_a_word_broken_at_a_line_end_is_joined_when_the_document_knows_it() -> None:
    pages = ["The water is cold.", "Bring wa- ter and a class- and package-level plan."]
    known = lexicon(pages)
    assert tidy(pages[1], known) == "Bring water and a class- and package-level plan."
    assert tidy("fresh wa-\nter", known) == "fresh water"


def test_a_compound_the_converter_joined_at_a_line_end_gets_its_hyphen_back() -> None:
    pages = ["These cross-referencing commands", "when crossreferencing. A microcavity"]
    assert tidy(pages[1], lexicon(pages)) == "when cross-referencing. A microcavity"


def test_code_and_addresses_keep_their_letters_where_the_text_hyphenates_the_word() -> None:
    pages = [
        "a two-column layout with LuaTeX-ja",
        "`\\if@twocolumn` and `{luatexja}`, see https://example.org/twocolumn or "
        "[the guide](https://example.org/luatexja); a twocolumn page",
    ]
    assert tidy(pages[1], lexicon(pages)) == (
        "\\if@twocolumn and {luatexja}, see https://example.org/twocolumn or "
        "[the guide](https://example.org/luatexja); a two-column page"
    )


def test_no_space_before_punctuation_after_a_styled_word_and_code_reads_as_its_text() -> None:
    page = (
        "between `\\and` and `\\or` . Note the **warning** . **Lemma 1.3** (Mine) **.** "
        "`letter` class"
    )
    assert (
        tidy(page)
        == "between \\and and \\or. Note the **warning**. **Lemma 1.3** (Mine). letter class"
    )


def test_a_sentence_naming_commands_and_files_reads_as_the_page_prints_it() -> None:
    """ifthen.pdf p.2, cfgguide.pdf p.3, pmlr-sample.pdf p.2: the typewriter face came out as
    code spans inside the sentence, which a search or a quote of the sentence does not match."""
    page = (
        "Note that there is no precedence between `\\and` and `\\or`. `\\provideboolean` "
        "silently does nothing in that case.\n\n"
        "The file `fonttext.cfg` can contain declarations relating to the use of fonts.\n\n"
        "Unnumbered multi-lined equations should be displayed using the `align*` environment."
    )
    assert tidy(page) == page.replace("`", "")


def test_code_that_would_read_otherwise_as_text_stays_code() -> None:
    page = (
        "Braces `\\{` and `\\}` and `*emphasis*` and `<name>`.\n\n"
        "A line\n`===`\n\n"
        "|Command|Meaning|\n|---|---|\n|`a|b`|`or`|"
    )
    assert tidy(page) == (
        "Braces `\\{` and `\\}` and `*emphasis*` and `<name>`.\n\n"
        "A line\n`===`\n\n"
        "|Command|Meaning|\n|---|---|\n|`a|b`|or|"
    ), "an escape, emphasis, a tag, a heading's rule and a cell's pipe kept as code"
    fenced = "```\n`kept` as it is\n```"
    assert tidy(fenced) == fenced


code_words = st.from_regex(r"[a-z][a-z0-9]{0,6}(?:[./-][a-z0-9]{1,4})?", fullmatch=True)


@given(
    st.lists(
        st.tuples(st.sampled_from(["", "\\"]), code_words, st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["The command", "Use", "See the file"]),
)
def test_code_of_names_in_a_sentence_reads_as_plain_text(
    names: list[tuple[str, str, bool]], lead: str
) -> None:
    """Commands (``\\name``), file names and words in a typewriter face, any number in a
    sentence: the sentence reads as printed, letter for letter."""
    words = [f"`{mark}{name}`" if code else f"{mark}{name}" for mark, name, code in names]
    sentence = f"{lead} {' and '.join(words)} here."
    assert tidy(sentence) == sentence.replace("`", "")


def test_code_blocks_are_left_as_they_are() -> None:
    page = "Text ‘‘quoted’’.\n\n```\nx = a- b  # <br> stays\n```\nAfter."
    assert (
        tidy(page, lexicon(["ab"])) == "Text “quoted”.\n\n```\nx = a- b  # <br> stays\n```\nAfter."
    )


def test_an_html_table_becomes_markdown_unless_a_cell_spans() -> None:
    plain = (
        "<table><tr><th>Unit</th><th>Cost</th></tr>"
        "<tr><td>Knight<br>mounted</td><td>3|4</td></tr></table>"
    )
    assert tidy(plain) == "|Unit|Cost|\n|---|---|\n|Knight mounted|3\\|4|"
    spanned = (
        '<table style="x"><tr><th rowspan="2">Station</th><th colspan="2" class="c">Moisture</th>'
        "</tr><tr><th>Spring</th><th>Autumn</th></tr><tr><td>North &amp; bank</td><td>27</td>"
        "<td>33</td></tr></table>"
    )
    assert tidy(spanned) == (
        '<table><tr><th rowspan="2">Station</th><th colspan="2">Moisture</th></tr>'
        "<tr><th>Spring</th><th>Autumn</th></tr>"
        "<tr><td>North &amp; bank</td><td>27</td><td>33</td></tr></table>"
    )


def test_chinese_and_japanese_lines_join_without_a_space_korean_words_keep_theirs() -> None:
    page = (
        "を読み込むと単位 zw を用いま すので，プリアン ブルに書きます。\n\n"
        "通过网络的安装程序本身非常小， 它可以从网上下载\n\n"
        "셸 옵션과 위치 매개변수를 설정합니다."
    )
    assert tidy(page) == (
        "を読み込むと単位 zw を用いますので，プリアンブルに書きます。\n\n"
        "通过网络的安装程序本身非常小，它可以从网上下载\n\n"
        "셸 옵션과 위치 매개변수를 설정합니다."
    )


def test_a_sentence_split_at_a_column_end_is_one_paragraph_again() -> None:
    split = (
        "## Abstract\n\nLarge language models are trained on\n\n"
        "![figure](images/a.png)\n\n"
        "corpora of many kinds, and we meas-\n\nure how much each adds.\n\n"
        "A new paragraph.\n\nanother one starts in lower case after a full stop."
    )
    assert run_on_paragraphs(split) == (
        "## Abstract\n\nLarge language models are trained on\n\n"
        "![figure](images/a.png)\n\n"
        "corpora of many kinds, and we measure how much each adds.\n\n"
        "A new paragraph.\n\nanother one starts in lower case after a full stop."
    )


@given(st.lists(st.text(alphabet="ab.,- \nAé#|", min_size=1, max_size=12), max_size=6))
def test_joining_paragraphs_loses_no_word_and_is_done_once(blocks: list[str]) -> None:
    text = "\n\n".join(blocks)
    once = run_on_paragraphs(text)
    assert run_on_paragraphs(once) == once
    assert once.replace("-", "").split() == [] or (
        "".join(once.replace("-", "").split()) == "".join(text.replace("-", "").split())
    )


def test_a_bold_heading_and_a_bold_paragraph_after_it_keep_their_marks() -> None:
    """njurepo p.5: a section heading in bold, then a list of options each led by its name in
    bold; merging the bold runs across the blank line took the heading's closing marks and
    the first name's opening ones ("language** ...")."""
    page = "# **3.2 选项** \n\n**language** 论文的主要语言。 **open** 正规出版物的章节\n"
    assert tidy(page) == "# 3.2 选项\n\n**language** 论文的主要语言。 **open** 正规出版物的章节\n"
    assert tidy("**Turnip** **crop** yields\n") == "**Turnip crop** yields\n"


words = st.text(alphabet="ab é", max_size=8).map(str.strip)


@given(st.lists(st.tuples(words.filter(bool), words), min_size=1, max_size=5))
def test_each_paragraph_keeps_its_bold_runs_whole(paragraphs: list[tuple[str, str]]) -> None:
    """A paragraph opening with a bold word (a term and its description, or a bold line
    alone) keeps both marks, whatever stands before and after it."""
    text = "\n\n".join(f"**{term}** {rest}".strip() for term, rest in paragraphs)
    for block in tidy(text).split("\n\n"):
        assert block.startswith("**") and block.count("**") == 2, block


def test_a_heading_without_text_does_not_part_its_paragraph() -> None:
    """The region a layout model drew round a drop cap keeps a heading mark when the letter
    has gone to its word: as CommonMark writes it and as the converter marks a header by its
    size, before headers are ranked."""
    for mark in ("#####", "#" * 49):
        page = f"This document, when compared to code, instructs a LaTeX \n\n{mark} \n\nstyle file."
        assert tidy(page) == "This document, when compared to code, instructs a LaTeX style file."
    assert tidy("# Title\n\n####### not a heading") == "# Title\n\n####### not a heading"
