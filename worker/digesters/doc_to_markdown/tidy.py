"""The converter's Markdown made fit to read, search and quote: no converter markup shown as
text, and words as the page prints them.

pymupdf4llm writes picture text between HTML comments with ``<br>`` line ends, ``<br>`` inside
table cells, ``<sup>``/``<u>``/``<mark>`` tags and ``~~`` for what MuPDF flags as struck out
(table rules running through text, often); a page shown with raw HTML off shows all of it
literally. TeX documents add their own: quote pairs (``‘‘...’’``) and accents set as separate
glyphs (``J´an Min´aˇc`` for ``Ján Mináč``). Headings and table header cells come wrapped in
bold they do not need; a word broken at a line end keeps its hyphen and a space, or (in layout
mode) loses the hyphen even where it is the word's own; a styled word is followed by a space
before its punctuation. What the document's own text says settles the words (:class:`Lexicon`);
tables are settled by :mod:`tables`; code blocks are left alone.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

from bucketdigest.shared.pagetext import SYMBOL
from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED
from bucketdigest.worker.digesters.doc_to_markdown.tables import tables_as_markdown

_PICTURE_TEXT = re.compile(
    r"(?:<!-- Start of picture text -->|-{5} Start of picture text -{5})\n?(.*?)"
    r"(?:<!-- End of picture text -->|-{5} End of picture text -{5})",
    re.DOTALL,
)
_SUPERSCRIPT = re.compile(r"<sup>(.*?)</sup>", re.DOTALL)
_LATEX_LOGO = re.compile(r"\bL(?:\*\*)?<sup>(?:\*\*)?A(?:\*\*)?</sup>(?:\*\*)? ?(?:\*\*)?TE ?X\b")
"""The LaTeX logo, its A raised and its E lowered: ``L<sup>A</sup> TEX``."""
_LATEX_PIECES = re.compile(r"L(?: A ?|A |_{1,2}A_{1,2} ?_{0,2})TE ?X(?![A-Za-z])")
"""The same logo whose raised A MuPDF reads as a word of its own (``LA TEX``, ``pdfLA TEX``,
``L A TEX``) or in a style of its own (``L__A__TEX``): searched as two words, neither of
them LaTeX. An upper-case ``LATEX`` is left alone (a glove's material is spelt so), and so is
a word going on in Latin letters (``LA TEXTURA``); Korean and Chinese set their particles
against it (``pdfLA TEX에서``)."""
_LATEX_EPSILON = re.compile(r"(?<=LaTeX2|LATEX2) ?(_?)([εϵ𝜀])\1(?![A-Za-z])")
"""LaTeX2ε's epsilon, set in italics apart from the logo: ``LaTeX2 _ε_``, ``LATEX2_ε_``
(the marks against a word are printed as they stand)."""
_SUBSCRIPT = re.compile(r"<sub>(.*?)</sub>", re.DOTALL)
_DROPPED_TAGS = re.compile(r"</?(?:u|mark|ins|s|del|strike)>")
_STRUCK = re.compile(r"~~(?=\S)(.*?)(?<=\S)~~")
_EMPTY_BOLD = re.compile(r"\*\*([ \t]*)\*\*")
"""Two bold runs with only spaces between them on a line: one run. Not across lines: the end
of a bold heading and the start of a bold paragraph after it lost their marks."""
_HEADING = re.compile(r"^(#+ )(.*)$")
_EMPTY_HEADING = re.compile(rf"^(?:#{{1,6}}|#{{{ENCODED},}})[ \t]*\n(?:[ \t]*\n)?", re.MULTILINE)
"""A heading with no text (a layout region whose only letter, a drop cap, went to its
paragraph), as CommonMark writes it or as the converter marks it (:mod:`headers`): nothing a
reader sees, but it parts the paragraph it stood in."""
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}")
_HYPHENATED = re.compile(r"\b([^\W\d_]+)-(?: |\n)([a-zß-ÿ][^\W\d_]*)")
_TEX_QUOTES = {"‘‘": "“", "’’": "”", ",,": "„"}
_SPACING_ACCENTS = {
    "´": "\u0301",
    "˝": "\u030b",
    "ˆ": "\u0302",
    "˜": "\u0303",
    "¯": "\u0304",
    "˘": "\u0306",
    "˙": "\u0307",
    "¨": "\u0308",
    "˚": "\u030a",
    "ˇ": "\u030c",
    "¸": "\u0327",
    "˛": "\u0328",
}
"""TeX's accent glyphs, each set before the letter it stands on."""
_ACCENT_BEFORE = re.compile(
    r"(?<![^\W\d_])([" + "".join(_SPACING_ACCENTS) + r"]) ?([^\W\d_])"
    r"|(?<=[^\W\d_])([" + "".join(_SPACING_ACCENTS) + r"])([^\W\d_])"
)
_SUPERSCRIPT_CHARS = str.maketrans("0123456789+-=()", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾")
_SUBSCRIPT_CHARS = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
_SCRIPTABLE = re.compile(r"[+\-=(]*[0-9][0-9+\-=()]*")
_STYLED_POINT = re.compile(r"(?<=\d)(\*\*|\*|_)([.,])\1(?=\d)")
"""A decimal point set in a math font comes out styled alone: ``124_._3``."""
_STYLED_SYMBOL = re.compile(rf"^([^_`\n]*[^\W_])_({SYMBOL}+)_(?=[\s.,;:)]|$)", re.MULTILINE)
"""A footnote mark or a symbol set in italics against the word before it (``version
2e_∗_``, ``Michael Shell_∗†_``, ``Σ_∗_``): CommonMark prints such marks as they stand. Only
the first of a line with no mark before it, so the marks cannot be closing an emphasis."""
_WORD = re.compile(r"[^\W\d_]+")
_BROKEN_WORD = re.compile(r"(?:[^\W\d_]{3,}|(?<![^\W\d_])[a-z]{2})[-¬\u00ad]$")
"""A word broken at a line end: three letters or more, or a lower-case syllable of two
(``im-``, ``re-``, ``al-``) that books break as often."""
_LITERAL = re.compile(r"`[^`\n]+`|\]\([^)\s]*\)|<?https?://[^\s)>]+>?")
"""Inline code, a link's address, a bare address: text to be taken letter for letter."""
_COMPOUND = re.compile(r"(?<![\w-])[^\W\d_]+(?:-[^\W\d_]+)+(?![\w-])")
_HAN_KANA = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_LINE_JOIN = re.compile(f"(?<=[{_HAN_KANA}]) (?=[{_HAN_KANA}])")
"""A space between two Chinese or Japanese characters (or their punctuation): Chinese and
Japanese set no spaces between characters, so it is a line end the converter joined with one
(``用いま すので``). Korean, which sets spaces between words, is not touched."""
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters: the glyphs of a font without Unicode for them (a font table's, TeX's
OT1 ligatures), which MuPDF gives as their codes. A reader sees nothing, and Python's
``splitlines`` takes ``\\x0b``, ``\\x1c``-``\\x1e`` and ``\\x85`` for line ends: each becomes
U+FFFD, as other glyphs without a character are."""
_PRINTED_AS = str.maketrans(
    {
        **{
            ligature: unicodedata.normalize("NFKC", chr(ligature))
            for ligature in range(0xFB00, 0xFB07)
        },
        **dict(zip(range(0xF8EB, 0xF8FF), "⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪⎮⎞⎟⎠⎤⎥⎦⎫⎬⎭", strict=True)),
        0xF8E6: "⏐",
        0xF8E7: "⎯",
        0xF8E8: "®",
        0xF8E9: "©",
        0xF8EA: "™",
    }
)
"""Characters the page prints that the text holds in another form: Latin ligatures (``ﬁ``,
kept in table cells, where a search for "specifications" missed ``speciﬁcations``) as their
letters, and the Symbol font's pieces of tall brackets, braces and arrows, which it puts in
the private use area (Adobe's glyph list: ``bracelefttp`` U+F8F1), as Unicode's."""
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_SPACE_BEFORE_MARK = re.compile(r"(?<=[`*_])[ \t]+(?=[.,;:!?)\]])|[ \t]+(?=\*\*[.,;:!?]+\*\*)")
_BOLD_MARK = re.compile(r"\*\*([.,;:!?]+)\*\*")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)([^\n]+?)(?<!`)\1(?!`)")
_CODE_TAGS = re.compile(r"</?code>")
_BLANK_LINE = re.compile(r"(\n[ \t]*\n)")


@dataclass(frozen=True)
class Lexicon:
    """What a document's own text says about its words: every word (case folded), and its
    hyphenated compounds by their letters (``crossreferencing`` → ``cross-referencing``)."""

    words: frozenset[str] = frozenset()
    compounds: dict[str, str] = field(default_factory=dict)


def lexicon(pages: Iterable[str]) -> Lexicon:
    """The :class:`Lexicon` of a document's pages."""
    words: set[str] = set()
    compounds: dict[str, str] = {}
    for page in pages:
        words.update(word.casefold() for word in _WORD.findall(page))
        for compound in _COMPOUND.findall(page):
            compounds.setdefault(compound.replace("-", "").casefold(), compound.casefold())
    return Lexicon(frozenset(words), compounds)


def tidy(markdown: str, known: Lexicon | None = None) -> str:
    """``markdown`` without converter markup, with TeX's quotes and accents composed, words
    broken at line ends joined and compounds given back their hyphen where ``known`` (see
    :func:`lexicon`) knows them. Code blocks are left as they are, but for their characters
    (:data:`_UNPRINTABLE`, :data:`_PRINTED_AS`)."""
    known = known or Lexicon()
    markdown = _UNPRINTABLE.sub("\ufffd", markdown).translate(_PRINTED_AS)
    return _between(_FENCE, markdown, lambda text: _tidy_text(text, known))


def _between(kept: re.Pattern[str], text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` made to what lies between the matches of ``kept``, which stay
    as they are."""
    pieces, last = [], 0
    for match in kept.finditer(text):
        pieces += [change(text[last : match.start()]), match[0]]
        last = match.end()
    pieces.append(change(text[last:]))
    return "".join(pieces)


def _tidy_text(markdown: str, known: Lexicon) -> str:
    text = _PICTURE_TEXT.sub(_picture_text, tables_as_markdown(markdown))
    text = _LATEX_LOGO.sub("LaTeX", text)
    text = _SUPERSCRIPT.sub(lambda m: _scripted(m[1], _SUPERSCRIPT_CHARS), text)
    text = _LATEX_PIECES.sub("LaTeX", text)  # after the raised A's tags (``L<sup>A</sup> TEX2``)
    text = _LATEX_EPSILON.sub(r"\2", text)
    text = _SUBSCRIPT.sub(lambda m: _scripted(m[1], _SUBSCRIPT_CHARS), text)
    text = _DROPPED_TAGS.sub("", text)
    text = _STRUCK.sub(r"\1", text)
    text = _EMPTY_BOLD.sub(r"\1", text)
    for pair, quote in _TEX_QUOTES.items():
        text = text.replace(pair, quote)
    text = _compose_accents(text)
    text = _join_hyphenated(text, known.words)
    text = _hyphen_restored(text, known.compounds)
    text = _SPACE_BEFORE_MARK.sub("", text)
    text = _BOLD_MARK.sub(r"\1", text)
    text = _STYLED_POINT.sub(r"\2", text)
    text = _STYLED_SYMBOL.sub(r"\1\2", text)
    text = _CJK_LINE_JOIN.sub("", text)
    text = run_on_paragraphs(_EMPTY_HEADING.sub("", text))
    text = "\n".join(_lines(text.split("\n")))
    return "".join(map(_code_as_text, _BLANK_LINE.split(text)))


@functools.cache
def _commonmark() -> MarkdownIt:
    """CommonMark with raw HTML and tables, as the renderers a reader uses read Markdown."""
    return MarkdownIt("commonmark").enable("table")


def _code_as_text(block: str) -> str:
    """``block`` (text between blank lines) with its inline code spans as plain text wherever
    that reads the same: what a renderer makes of the block differs only by the ``<code>``
    tags. The converter marks every run of a typewriter face as code, so a sentence that names
    a command (``between `\\and` and `\\or```) or a file reads with backticks inside it, which
    is not what the page prints and which a search or a quote of the sentence does not match.
    Code whose text would read otherwise stays code: markup (``*a*``, ``<name>``, ``\\{``,
    ``|`` in a table) and a line that would turn the line above into a heading (``===``)."""
    if "`" not in block:
        return block
    spans = list(_CODE_SPAN.finditer(block))
    if not spans:
        return block
    wanted = _read(block)
    every = _CODE_SPAN.sub(lambda span: _code_text(span[2]), block)
    if _read(every) == wanted:
        return every
    for span in reversed(spans):  # one at a time, from the end, so the offsets hold
        tried = block[: span.start()] + _code_text(span[2]) + block[span.end() :]
        if _read(tried) == wanted:
            block = tried
    return block


def _read(block: str) -> str:
    """What a reader sees of ``block``: its HTML, code as any other text."""
    return _CODE_TAGS.sub("", _commonmark().render(block))


def _code_text(inside: str) -> str:
    """A code span's text: CommonMark takes one space off each end when both have one."""
    if inside[0] == inside[-1] == " " and inside.strip():
        return inside[1:-1]
    return inside


_NOT_A_PARAGRAPH = re.compile(r"^(?:[#|!>*+`<\[]|-|\d+[.)]\s|\\|\$\$)")
_RUNS_ON = re.compile(r"[^\W\d_][,;]?$|[^\W\d_]{2,}-$")


def run_on_paragraphs(text: str) -> str:
    """A sentence the converter split into two paragraphs at a column's end or a page's
    furniture (the first words of an abstract above a column break) joined back: a paragraph
    that ends without end punctuation (a word, a comma, a word broken by its hyphen) and one
    that goes on in lower case right after it are one paragraph."""
    blocks = text.split("\n\n")
    joined: list[str] = []
    for block in blocks:
        if joined and _runs_on(joined[-1], block):
            before = joined[-1].rstrip()
            glue = before[:-1] if before.endswith("-") else before + " "
            joined[-1] = glue + block.lstrip()
        else:
            joined.append(block)
    return "\n\n".join(joined)


def _runs_on(before: str, after: str) -> bool:
    """Whether the paragraph ``after`` goes on with the sentence ``before`` left open."""
    before, after = before.strip(), after.strip()
    if not before or not after:
        return False
    last_line = before.rsplit("\n", 1)[-1]
    return (
        _NOT_A_PARAGRAPH.match(before) is None
        and _NOT_A_PARAGRAPH.match(last_line) is None
        and _NOT_A_PARAGRAPH.match(after) is None
        and _RUNS_ON.search(last_line) is not None
        and after[0].isalpha()
        and after[0].islower()
    )


def joined_lines(lines: list[str]) -> str:
    """Lines of a paragraph as one, as layout mode joins them: a word broken at a line end
    loses its hyphen (:func:`tidy` gives a compound its own back)."""
    joined = ""
    for line in (line for line in lines if line):
        if _BROKEN_WORD.search(joined):
            joined = joined[:-1] + line
        else:
            joined = f"{joined} {line}" if joined else line
    return joined


def _picture_text(match: re.Match[str]) -> str:
    """Text found inside a picture: a table stays a table, other lines become a quote, its
    lines joined into sentences."""
    lines = [line.strip() for line in re.split(r"<br>|\n", match[1]) if line.strip()]
    if not lines:
        return ""
    if all(line.startswith("|") for line in lines):
        return "\n".join(lines) + "\n"
    return f"> {joined_lines(lines)}\n"


def _scripted(inner: str, characters: dict[int, str]) -> str:
    """Digits and signs as Unicode super- or subscripts (``m²``, footnote marks ``¹``), other
    raised or lowered text inline (``1st``, the A of the LaTeX logo)."""
    plain = inner.replace("**", "").replace("_", "").strip()
    if _SCRIPTABLE.fullmatch(plain):
        return plain.translate(characters)
    return inner


def _compose(letter: str, accent: str) -> str | None:
    composed = unicodedata.normalize("NFC", letter.replace("ı", "i") + accent)
    return composed if len(composed) == 1 else None


def _compose_accents(text: str) -> str:
    def before(match: re.Match[str]) -> str:
        accent, letter = (match[1], match[2]) if match[1] else (match[3], match[4])
        end = match.end()
        if accent == "´" and letter == "s" and (end == len(text) or not text[end].isalpha()):
            return match[0]  # an acute for an apostrophe: it´s, John´s
        return _compose(letter, _SPACING_ACCENTS[accent]) or match[0]

    return _ACCENT_BEFORE.sub(before, text)


def _join_hyphenated(text: str, words: Collection[str]) -> str:
    """``exam- ple`` is ``example`` when the document has that word elsewhere; otherwise
    the hyphen is kept (``class- and package-level``)."""

    def join(match: re.Match[str]) -> str:
        joined = match[1] + match[2]
        return joined if joined.casefold() in words else match[0]

    return _HYPHENATED.sub(join, text) if words else text


def _hyphen_restored(text: str, compounds: dict[str, str]) -> str:
    """The converter joins a word broken at a line end and drops the hyphen, also where the
    hyphen is the word's own (``micro-cavity`` became ``microcavity``): a word the document
    writes elsewhere with a hyphen gets it back, but in code and addresses (:data:`_LITERAL`),
    which say what they say: ``\\if@twocolumn`` stays so where the text says "two-column"."""
    if not compounds:
        return text

    def restore(match: re.Match[str]) -> str:
        word = match[0]
        compound = compounds.get(word.casefold())
        if compound is None or len(compound) - compound.count("-") != len(word):
            return word  # casefolding changed its length (``ß``, ``ﬁ``): no letter map
        letters = iter(word)
        return "".join("-" if c == "-" else next(letters) for c in compound)

    return _between(_LITERAL, text, lambda words: _WORD.sub(restore, words))


def _lines(lines: list[str]) -> Iterable[str]:
    """Lines with ``<br>`` resolved (a space inside a table cell, a line break elsewhere),
    headings without bold, and a table's header cells without bold."""
    previous = ""
    for number, line in enumerate(lines):
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if line.startswith("|"):
            line = line.replace("<br>", " ")
            if _TABLE_RULE.match(following) and not previous.startswith("|"):
                line = _unbold_cells(line)
        else:
            line = line.replace("<br>", "\n")
        heading = _HEADING.match(line)
        if heading:
            line = heading[1] + re.sub(r"\s+", " ", heading[2].replace("**", "")).strip()
        previous = line
        yield line


def _unbold_cells(row: str) -> str:
    cells = row.split("|")
    return "|".join(
        cell.strip()[2:-2] if re.fullmatch(r"\s*\*\*[^*]+\*\*\s*", cell) else cell for cell in cells
    )
