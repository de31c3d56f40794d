"""The text the converter reads, with the word spaces and order MuPDF gets wrong put right.

pymupdf4llm reads a page's text through ``TextPage.extractDICT`` (both modes, and our plain
pages through ``Page.get_text("dict")``), its tables' text through ``extractRAWDICT`` and
``extractWORDS``. While converting, these methods give right-to-left lines in reading order
with their word spaces (:mod:`.rtl`; not in tables), Korean lines with theirs
(:mod:`.hangul`), lines of a font whose width table lies with theirs (:mod:`.font_widths`), and
drop caps before their paragraphs (:mod:`.drop_caps`); pages with none of these are left as
MuPDF gives them, at little cost. Image blocks come without their pixels (:mod:`.image_blocks`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.drop_caps import joined_drop_caps
from bucketdigest.worker.digesters.doc_to_markdown.font_widths import (
    GLUED,
    FontPrograms,
    space_by_true_widths,
)
from bucketdigest.worker.digesters.doc_to_markdown.hangul import HANGUL_TEXT, space_hangul_line
from bucketdigest.worker.digesters.doc_to_markdown.image_blocks import without_pixels
from bucketdigest.worker.digesters.doc_to_markdown.rtl import (
    RTL_TEXT,
    Glyphs,
    merge_rtl_line,
)
from bucketdigest.worker.sandbox import is_out_of_memory

_EXTRACT_DICT = pymupdf.TextPage.extractDICT
_EXTRACT_RAWDICT = pymupdf.TextPage.extractRAWDICT
_EXTRACT_WORDS = pymupdf.TextPage.extractWORDS
_READ_DICT = without_pixels(_EXTRACT_DICT)
_READ_RAWDICT = without_pixels(_EXTRACT_RAWDICT)
_WITH_LIGATURES = pymupdf.TEXTFLAGS_TEXT
_PLAIN_TEXT = _WITH_LIGATURES & ~pymupdf.TEXT_PRESERVE_LIGATURES
"""Ligatures as their letters; on some pages MuPDF then cannot list the characters (a
ligature's letters are no characters), and the text with ligatures kept is read instead."""


PageArea = tuple[int, int, tuple[float, float, float, float]]
"""A page's area as text is read from it: the document's id, the page's number, the clip."""
MeasuredPages = set[PageArea]
"""Page areas whose long runs of letters were measured and are words (a manual's
``DeclareRobustCommand``): measuring reads every character of the page (``extractRAWDICT``),
so a conversion does it once per page and area, not at each of its reads."""


def _written_across(text: str, page_key: PageArea | None, measured: MeasuredPages) -> bool:
    """Whether the text holds right-to-left or Korean lines, or a run of letters that may be
    words without their spaces, not yet measured on this page."""
    if RTL_TEXT.search(text) or HANGUL_TEXT.search(text):
        return True
    return page_key not in measured and GLUED.search(text) is not None


def _page_key(textpage: pymupdf.TextPage) -> PageArea | None:
    page = textpage.parent
    number = getattr(page, "number", None)
    if not isinstance(number, int):
        return None
    return (id(page.parent), number, tuple(textpage.rect))


def _as_dict(blocks: list[dict[str, Any]]) -> None:
    """Drop the characters, as ``extractDICT`` gives no characters, only span texts."""
    for block in blocks:
        for line in block.get("lines", ()):
            for span in line["spans"]:
                if "text" not in span:
                    span["text"] = "".join(char["c"] for char in span["chars"])
                span.pop("chars", None)


def _fixed(
    textpage: pymupdf.TextPage, *args: Any, measured: MeasuredPages | None = None, **kwargs: Any
) -> dict[str, Any] | None:
    """The page's text as ``extractDICT`` gives it, with right-to-left and Korean lines made
    right and lines of lying widths spaced; None when MuPDF cannot list the page's characters
    (a glyph's code is no character: ``chr()`` fails). A page whose long runs of letters all
    proved words goes into ``measured``."""
    try:
        raw: dict[str, Any] = _READ_RAWDICT(textpage, *args, **kwargs)
        glyphs: Glyphs | None = None
        fonts = FontPrograms(textpage.parent)
        lied = False
        for block in raw["blocks"]:
            for line in block.get("lines", ()):
                text = "".join(char["c"] for span in line["spans"] for char in span["chars"])
                if RTL_TEXT.search(text) or HANGUL_TEXT.search(text):
                    glyphs = glyphs or Glyphs.of(textpage.parent)
                    if not merge_rtl_line(line, glyphs):
                        space_hangul_line(line, glyphs)
                elif GLUED.search(text):
                    lied = space_by_true_widths(line, fonts) or lied
    except (SystemError, ValueError):
        return None
    page_key = _page_key(textpage)
    if measured is not None and page_key is not None and not lied:
        measured.add(page_key)
    _as_dict(raw["blocks"])
    return raw


def spaced_dict(
    textpage: pymupdf.TextPage, *args: Any, measured: MeasuredPages | None = None, **kwargs: Any
) -> dict[str, Any]:
    """``textpage.extractDICT(...)``, with right-to-left and Korean lines made right, lines
    of lying widths spaced (pages in ``measured`` have none) and drop caps at the front of
    their paragraphs (:mod:`.drop_caps`)."""
    page: dict[str, Any] = _READ_DICT(textpage, *args, **kwargs)
    measured = set() if measured is None else measured
    text = "\n".join(
        span["text"]
        for block in page["blocks"]
        for line in block.get("lines", ())
        for span in line["spans"]
    )
    if _written_across(text, _page_key(textpage), measured):
        page = _fixed(textpage, *args, measured=measured, **kwargs) or page
    return joined_drop_caps(page)


def spaced_rawdict(textpage: pymupdf.TextPage, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``textpage.extractRAWDICT(...)`` (the text of layout mode's tables), with Korean lines
    given their word spaces as characters."""
    page: dict[str, Any] = _READ_RAWDICT(textpage, *args, **kwargs)
    lines = [line for block in page["blocks"] for line in block.get("lines", ())]
    if not any(
        HANGUL_TEXT.search(char["c"])
        for line in lines
        for span in line["spans"]
        for char in span["chars"]
    ):
        return page
    try:
        glyphs = Glyphs.of(textpage.parent)
    except (SystemError, ValueError):
        return page
    for line in lines:
        space_hangul_line(line, glyphs)
    return page


Word = tuple[float, float, float, float, str, int, int, int]


def _line_words(chars: list[dict[str, Any]], block: int, line: int, delimiters: str) -> list[Word]:
    """A line's words as ``extractWORDS`` gives them: runs of characters between spaces and
    delimiters, each with the union of their boxes."""
    words: list[Word] = []
    run: list[dict[str, Any]] = []
    for char in [*chars, None]:
        if char is not None and not char["c"].isspace() and char["c"] not in delimiters:
            run.append(char)
            continue
        if run:
            box = pymupdf.Rect(run[0]["bbox"])
            for glyph in run[1:]:
                box |= glyph["bbox"]
            text = "".join(glyph["c"] for glyph in run)
            words.append((*tuple(box), text, block, line, len(words)))  # type: ignore[arg-type]
        run = []
    return words


def spaced_words(textpage: pymupdf.TextPage, delimiters: str | None = None) -> list[Word]:
    """``textpage.extractWORDS(...)`` (the words table refinement reads), with the words of
    Korean lines split where :func:`spaced_rawdict` puts spaces."""
    words: list[Word] = _EXTRACT_WORDS(textpage, delimiters)
    if not any(HANGUL_TEXT.search(word[4]) for word in words):
        return words
    korean: dict[tuple[int, int], list[Word]] = {}
    for block in spaced_rawdict(textpage)["blocks"]:
        for number, line in enumerate(block.get("lines", ())):
            chars = [char for span in line["spans"] for char in span["chars"]]
            if HANGUL_TEXT.search("".join(char["c"] for char in chars)):
                key = (block["number"], number)
                korean[key] = _line_words(chars, *key, delimiters or "")
    kept = [word for word in words if (word[5], word[6]) not in korean]
    return sorted(
        [*kept, *(word for line in korean.values() for word in line)],
        key=lambda word: word[5:],
    )


def page_text(page: pymupdf.Page, measured: MeasuredPages | None = None) -> str:
    """A page's plain text, with lines as :func:`spaced_dict` makes them (``measured`` as
    there), and ligatures and presentation forms as their letters, as the Markdown has them."""
    textpage = page.get_textpage(flags=_PLAIN_TEXT)
    text = str(textpage.extractText())
    measured = set() if measured is None else measured
    if not _written_across(text, _page_key(textpage), measured):
        return text
    fixed = _fixed(textpage, measured=measured) or _fixed(
        page.get_textpage(flags=_WITH_LIGATURES), measured=measured
    )
    if fixed is None:
        return text
    return "\n\n".join(
        "\n".join("".join(span["text"] for span in line["spans"]) for line in block["lines"])
        for block in fixed["blocks"]
        if block.get("lines")
    )


def _or_as_mupdf_reads(
    fix: Callable[..., Any], extract: Callable[..., Any], failed: list[str]
) -> Callable[..., Any]:
    """``fix``, except that where it raises the text is read as MuPDF reads it (the failure
    noted in ``failed`` with its page): a fix that meets a page it was not made for costs that
    page its fix, never the page."""

    def guarded(textpage: pymupdf.TextPage, *args: Any, **kwargs: Any) -> Any:
        try:
            return fix(textpage, *args, **kwargs)
        except Exception as exc:
            if is_out_of_memory(exc):
                raise
            page = getattr(textpage.parent, "number", None)
            where = f"page {page + 1}" if isinstance(page, int) else "a page"
            failed.append(
                f"{where}: the word-space and right-to-left fix failed "
                f"({type(exc).__name__}: {exc}); its lines are as MuPDF reads them"
            )
            return extract(textpage, *args, **kwargs)

    return guarded


@contextmanager
def spaced_lines(measured: MeasuredPages | None = None) -> Iterator[list[str]]:
    """While converting, right-to-left and Korean lines are read as :func:`spaced_dict`
    makes them (``measured`` the pages it measured, shared with :func:`page_text`), the
    characters and words of Korean lines (which tables are made of) as
    :func:`spaced_rawdict` and :func:`spaced_words` do. Yields the list of pages where a fix
    failed (read as MuPDF reads them instead)."""
    failed: list[str] = []
    pymupdf.TextPage.extractDICT = _or_as_mupdf_reads(  # type: ignore[method-assign]
        functools.partial(spaced_dict, measured=set() if measured is None else measured),
        _EXTRACT_DICT,
        failed,
    )
    pymupdf.TextPage.extractRAWDICT = _or_as_mupdf_reads(  # type: ignore[method-assign]
        spaced_rawdict, _EXTRACT_RAWDICT, failed
    )
    pymupdf.TextPage.extractWORDS = _or_as_mupdf_reads(spaced_words, _EXTRACT_WORDS, failed)  # type: ignore[method-assign]
    try:
        yield failed
    finally:
        pymupdf.TextPage.extractDICT = _EXTRACT_DICT  # type: ignore[method-assign]
        pymupdf.TextPage.extractRAWDICT = _EXTRACT_RAWDICT  # type: ignore[method-assign]
        pymupdf.TextPage.extractWORDS = _EXTRACT_WORDS  # type: ignore[method-assign]
