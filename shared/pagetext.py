"""The document's text as later digesters read it: converter Markdown per page, with the OCR
text of pages that had no text layer appended, plus helpers to strip Markdown syntax.

The same merge builds ``document.md`` in the result zip, so what is searched, tagged and
summarised is exactly what a person reads there.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache
from pathlib import Path

from bucketdigest.shared.result import OCR_DIR, PAGES_DIR, WEB_DIR, merged_page

_IMAGE_LINK = re.compile(r"!\[[^\]]*(?<!\\)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)(?<!\\)\]\([^)]*\)")
"""A link; not printed text whose bracket is escaped (``\\setkomainfont[<name>\\](<Regular>)``)."""
_HTML_ELEMENTS = (
    "a|abbr|b|bdi|bdo|big|blockquote|br|caption|center|cite|code|col|colgroup|dd|del|details|"
    "dfn|div|dl|dt|em|figcaption|figure|font|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|pre|q|s|samp|"
    "small|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|tr|tt|u|ul|var|wbr"
)
_HTML_TAG = re.compile(rf"</?(?:{_HTML_ELEMENTS})(?:\s[^<>]*)?/?>", re.IGNORECASE)
"""An HTML tag, not any text in angle brackets: ``<0, 0, 1>`` in a code listing and
``<basename>`` in a manual's command syntax are content."""
_LINE_SYNTAX = re.compile(r"^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}.*$", re.MULTILINE)
_EMPHASIS = re.compile(
    r"(?=[*`_])(\*\*|\*|`|(?<!\w)__|(?<!\w)_)(?=\S)(.+?)(?<=\S)\1(?![^\W\d_⁰¹²³⁴⁵⁶⁷⁸⁹])(?!_)"
)
"""Emphasis and code spans; ``_`` inside a word (``image_width``) is a letter, as in CommonMark.
A mark may close before a digit or a superscript (``_t_³``: an italic symbol with its power)."""
SYMBOL = r"[^\x00-\x7f\w\s]"
"""A symbol or punctuation mark outside ASCII (``∗``, ``†``, ``−``, ``⟨``), as a regex class:
what an italic mark set against a word may hold (the converter's footnote stars)."""
_MARK_ON_SYMBOL = re.compile(rf"(?=[*_])(?:[*_](?={SYMBOL})|(?<={SYMBOL})[*_])")
"""An emphasis mark touching such a symbol, left over once pairs are taken away: a footnote
mark or bracket set in italics against a word (``version 2e_∗_``, ``⟨∗_article⟩_``), which
CommonMark prints as it stands. A mark of ASCII text (``x_+_y`` in code) stays."""
_BOLD_MARKS = re.compile(r"\*{2,}")
"""Bold marks, paired or not (the converter may close one in another block: ``AUTHORITY:**
10 U.S.C.``): never text outside code, which keeps its Markdown."""
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$|^(.*? \| .*)$", re.MULTILINE)
"""A table's row: in Markdown (``| a | b |``), or as chunks hold it (``a | b``)."""
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKS = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹](?<=[^\W\d_][⁰¹²³⁴⁵⁶⁷⁸⁹])[⁰¹²³⁴⁵⁶⁷⁸⁹]*")
"""Superscript digits on a word: footnote marks (``Smith¹²``), not words of their own. (Each
pattern here that a search runs over every snippet's text first tests the one character it
can start with: a lookbehind first was tried at every position, a third of a snippet's cost.)"""
_SUPERSCRIPT_DIGITS = frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹")
_SPACES = re.compile(r"[ \t]{2,}|\t")
"""Runs of spaces and tabs that one space replaces (a lone space is left as it is: replacing
each of a snippet's spaces by itself cost more than the rest of stripping its syntax)."""
CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
"""The Chinese and Japanese characters, as a regular expression's character range: their
words are not spaced."""


@cache
def _token() -> re.Pattern[str]:
    """Words, marks on their letters included (Arabic vowel signs, Devanagari vowel signs),
    except that each Chinese or Japanese character counts alone (no spaces there). Built on
    first use: listing the marks takes 30 ms."""
    marks = "".join(
        chr(code) for code in range(0x10000) if unicodedata.category(chr(code)) in ("Mn", "Mc")
    )
    return re.compile(f"[{CJK}]|[^\\W{CJK}](?:[^\\W{CJK}]|[{marks}])*")


DOUBTFUL_OPEN = "<!--doubtful-->"
DOUBTFUL_CLOSE = "<!--/doubtful-->"
"""A reading no reader is sure of (handwriting, a faint scan) stands between these marks in a
page's Markdown: a person sees it, search, tags and summaries leave it out."""
_DOUBTFUL = re.compile(f"{re.escape(DOUBTFUL_OPEN)}.*?{re.escape(DOUBTFUL_CLOSE)}\n?", re.DOTALL)


def doubtful_block(text: str, confidence: float) -> str:
    """``text`` as a page's Markdown gives a reading it is not sure of."""
    quoted = " ".join(text.split())
    note = f"*Doubtful reading (OCR confidence {confidence:.0f}%), not searched:*"
    return f"{DOUBTFUL_OPEN}\n> {note} {quoted}\n{DOUBTFUL_CLOSE}"


def without_doubtful(markdown: str) -> str:
    return _DOUBTFUL.sub("", markdown)


def document_pages(tree: Path, doubtful: bool = True) -> list[str]:
    """Each page's Markdown (image links relative to the zip's root) with its OCR text and,
    for a link file, the linked page's text; without ``doubtful`` readings (for search, tags
    and summaries)."""
    pages = []
    for path in sorted((tree / PAGES_DIR).glob("*.md")):
        extra = ""
        for folder in (OCR_DIR, WEB_DIR):
            other = tree / folder / path.name
            if other.is_file():
                extra += other.read_text(encoding="utf-8") + "\n\n"
        page = merged_page(path.read_text(encoding="utf-8"), extra)
        pages.append(page if doubtful else without_doubtful(page).strip())
    return pages


def document_text(tree: Path) -> str:
    """The whole document as plain text, pages separated by blank lines (no doubtful
    readings)."""
    return "\n\n".join(plain_text(page) for page in document_pages(tree, doubtful=False))


def image_links(markdown: str) -> list[str]:
    """The page's image links (``![...](...)``), in order."""
    return _IMAGE_LINK.findall(markdown)


def has_text(markdown: str) -> bool:
    """Whether a page's Markdown holds any text besides image links."""
    return bool(_IMAGE_LINK.sub("", markdown).strip())


def plain_text(markdown: str) -> str:
    """Markdown without its syntax (images, link targets, comments, tags, emphasis, table
    rules and borders, the escape of a bracket that is not a link's) and without footnote
    marks."""
    return _SPACES.sub(" ", _without_syntax(markdown).replace("|", " ")).strip()


def _without_syntax(markdown: str) -> str:
    """(A pattern that cannot match without a mark the text lacks is not run: search strips
    ten snippets' syntax a query.)"""
    text = _IMAGE_LINK.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    text = _COMMENT.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    if not _SUPERSCRIPT_DIGITS.isdisjoint(text):
        text = _MARKS.sub("", text)
    if "---" in text:
        text = _TABLE_RULE.sub("", text)
    text = _LINE_SYNTAX.sub("", text)
    if "**" in text:
        text = _BOLD_MARKS.sub("", text)
    if "*" in text or "`" in text or "_" in text:
        text = _EMPHASIS.sub(r"\2", text)
        text = _MARK_ON_SYMBOL.sub("", text)
    text = text.replace("\\](", "](")
    return _SPACES.sub(" ", text).strip()


def readable_text(markdown: str) -> str:
    """Markdown as a person reads a snippet of it: :func:`plain_text`, a table's rows as
    "cell; cell." lines (its rule rows dropped)."""

    def row(match: re.Match[str]) -> str:
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        cells = [c.strip().replace("\\|", "|") for c in _CELL_BORDER.split(inner)]
        text = "; ".join(c for c in cells if c)
        return f"{text}." if text and text[-1] not in ".:;!?" else text

    if "---" in markdown:
        markdown = _TABLE_RULE.sub("", markdown)
    if "|" in markdown:
        markdown = _TABLE_ROW.sub(row, markdown)
    return _without_syntax(markdown)


def heading(line: str) -> tuple[int, str] | None:
    """``## Combat`` → ``(2, "Combat")``; None for any other line."""
    match = _HEADING.match(line)
    if not match:
        return None
    return len(match.group(1)), plain_text(match.group(2))


_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` fit for UTF-8. Text from PDFs may hold UTF-16 surrogates: a pair becomes the
    character it stands for, a lone one U+FFFD."""
    text = _SURROGATE_PAIR.sub(
        lambda pair: pair.group().encode("utf-16", "surrogatepass").decode("utf-16"), text
    )
    return _SURROGATE.sub("\ufffd", text)


def word_counts(text: str) -> Counter[str]:
    """How often each word (each CJK character) occurs in ``text``, case folded and in NFKC
    form: a ligature (``ﬁ``) or an Arabic presentation form (``ﺳ``) is the same word as its
    letters, as a reader sees it."""
    return Counter(_token().findall(unicodedata.normalize("NFKC", text).casefold()))


def word_recall(markdown: str, reference: Counter[str]) -> float:
    """The share of ``reference``'s words (with repeats) that ``markdown``'s text holds."""
    total = sum(reference.values())
    if total == 0:
        return 1.0
    found = word_counts(plain_text(markdown))
    return sum(min(n, found[word]) for word, n in reference.items()) / total
