"""Glyphs a font maps to no character leave the Markdown, and a page made of them is read by
OCR instead of its text layer."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared.pagetext import has_text, image_links, plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.unmapped import (
    UNMAPPED,
    legible,
    unmapped_share,
    unreadable,
)
from tests.documents import RULES, unmapped_font_pdf
from tests.worker.test_digesters import _chain_until, _ctx

pieces = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    st.sampled_from([UNMAPPED, UNMAPPED * 3, " ", "\n", "\n\n", "# ", "- ", "> ", "| ", "    "]),
)
glyphs = st.lists(pieces, max_size=40).map("".join)
pages = st.one_of(
    glyphs, glyphs.map(lambda page: "Words a page prints, enough to read. " * 3 + page)
)
"""Pages mostly of unmapped glyphs, and pages where they are a few among words."""


def _is_subsequence(short: str, long: str) -> bool:
    rest = iter(long)
    return all(character in rest for character in short)


@given(pages)
def test_a_legible_page_only_loses_its_unmapped_glyphs_and_the_spaces_they_leave(
    page: str,
) -> None:
    kept = legible(page)
    assert UNMAPPED not in kept
    if UNMAPPED not in page:
        assert kept == page
    elif unreadable(page):
        assert kept == "\n\n".join(image_links(page))
    else:
        assert _is_subsequence(kept, page), "only taken out, nothing added or moved"
        assert _letters(kept) == _letters(page), "every letter and digit kept"


def _letters(text: str) -> str:
    return "".join(character for character in text if character.isalnum())


def test_unmapped_glyphs_go_with_the_space_that_set_them_apart() -> None:
    body = "Some text as the page prints it, long enough to read. "
    assert legible(body + "Such as the \ufffd sign.") == body + "Such as the sign."
    assert legible(body + "\n\n  \ufffd\ufffd indented") == body + "\n\n  indented"
    assert legible(body + "\n\n\ufffd\ufffd\ufffd boxed") == body + "\n\nboxed"
    assert legible(body + "\n\n###### \ufffd\n\nNext") == body + "\n\n\nNext"
    assert legible(body + "\n\n나랏말\ufffd미") == body + "\n\n나랏말미"
    assert legible(body + "ends \ufffd") == body + "ends"


def test_a_page_mostly_of_unmapped_glyphs_keeps_only_its_images() -> None:
    garbled = "T`§rK\ufffd\ufffd \ufffd\ufffd\ufffdwt\ufffd \ufffd w¡ ¾\ufffdÐ\ufffd"
    page = f"{garbled}\n\n![picture](images/page-0001-01.png)\n\n{garbled}"
    assert unmapped_share(plain_text(page)) >= 0.3 and unreadable(page)
    assert legible(page) == "![picture](images/page-0001-01.png)"
    assert not has_text(legible(page)), "page-ocr reads a page without text"
    assert unreadable("\ufffd\ufffd"), "a Type 3 font's page: nothing maps"


def test_a_page_whose_other_text_reads_as_words_keeps_it_among_many_glyphs() -> None:
    """A manual boxing its examples in a symbol font's rules: the glyphs go, the words stay,
    in any script."""
    rule = "\ufffd" * 40
    for words in ("罫線で囲んだ例です。記号の書体で描かれています。", "An example in rules."):
        page = f"{rule}\n\n{words}\n\n{rule}"
        assert unmapped_share(plain_text(page)) >= 0.3 and not unreadable(page)
        assert legible(page) == f"\n\n{words}\n\n"


def test_a_page_in_a_font_without_characters_is_read_by_ocr(tmp_path: Path) -> None:
    source = unmapped_font_pdf(tmp_path / "type3.pdf")
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert not has_text(conversion.pages[0]), "no boxes or control codes for its text"
    assert any("page-ocr reads them instead" in problem for problem in conversion.problems)
    results = _chain_until(_ctx(tmp_path, source), "page-ocr")
    assert RULES.split(".")[0] in results["ocr"].files["ocr/0001.md"].decode()
