"""What the full-text index tokenizes: a text's words, with runs of Chinese, Japanese and
Korean characters spelled as overlapping pairs.

Lance's tokenizer splits on spaces and punctuation, so a CJK sentence (no spaces) is one
"word" and a few characters pasted from it match nothing. Overlapping character pairs (the
bigrams of Lucene's CJK analyzer) need no dictionary, and a query spelled the same way matches
any span of the text, wherever it starts or ends. Measured on 185 known-item queries of 6-10
characters from real Chinese, Japanese and Korean text: recall@10 0.92 with pairs, against 0.27
with the plain tokenizer and 0.62 with ICU's dictionary word breaker.
"""

from __future__ import annotations

import re
import string
import zlib
from collections.abc import Sequence
from typing import Any

from bucketdigest.search.index import TERMS

CJK_RUN = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0002fa1f"  # CJK extensions B-F, compatibility supplement
    "]+"
)


STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "about",
        "do",
        "does",
    ]
)
"""Words that tell no passage from another: the commonest (which the index leaves out too) and
those that only ask ("how", "which", "does"). Left out where a query's words are looked up
(:func:`any_words`) or counted (the share of them a passage holds, its snippet's matches)."""

_HAN_KANA = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_BROKEN_RUN = re.compile(f"(?<=[{_HAN_KANA}])\\s+(?=[{_HAN_KANA}])")
"""Space between Chinese or Japanese characters: a line end (Korean spaces words; kept)."""


def _pairs(run: re.Match[str]) -> str:
    chars = run.group()
    if len(chars) == 1:
        return f" {chars} "
    return " " + " ".join(chars[i : i + 2] for i in range(len(chars) - 1)) + " "


def index_terms(text: str) -> str:
    """``text`` as the full-text index reads it (and a query is matched): unchanged but for
    CJK runs, which become their overlapping character pairs."""
    if text.isascii() or not CJK_RUN.search(text):  # isascii: a fifth of a rebuild's parsing
        return text
    return CJK_RUN.sub(_pairs, _BROKEN_RUN.sub("", text))


def cjk_pairs(text: str) -> set[str]:
    """The character pairs (and lone characters) of ``text``'s CJK runs."""
    return set(index_terms(" ".join(m.group() for m in CJK_RUN.finditer(text))).split())


def matched_text(text: str, headings: list[str]) -> str:
    """What a keyword search matches a chunk by: the headings it stands under (chapter,
    section), then its text. A question names the topic a section's title names ("the density
    of the t distribution") more often than the words of a formula or table under it."""
    path = " ".join(heading_title(h) for h in headings)
    return f"{path}\n{text}" if path else text


def heading_title(line: str) -> str:
    """A heading's words without its Markdown marks (``## **Combat**`` → ``Combat``): how a
    chunk's headings are matched and left out of its fingerprint alike."""
    return _HEADING_MARKS.sub("", line)


_HEADING_MARKS = re.compile(r"\A[\s#*_]+|[\s#*_]+\Z")
"""Marks and spaces at a heading's ends, in any order (``## **\\x1f_0**``: a control
character Python counts as a space between the marks)."""


FINGERPRINT_MIN_WORDS = 12
"""Texts shorter than this get no fingerprint (0): two short headings alike are not the same
passage."""
_PUNCTUATION = str.maketrans(
    dict.fromkeys(
        string.punctuation + "\u201c\u201d\u2018\u2019\u00ab\u00bb\u2013\u2014\u2026\u2022\u00b7",
        " ",
    )
)
"""Punctuation read as spaces when a text's words are fingerprinted (a translate and a split
cost a tenth of a regular expression's word search)."""
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s.*$", re.MULTILINE)


def fingerprint(text: str, headings: Sequence[str] = ()) -> int:
    """The fingerprint of one text (:func:`fingerprints`)."""
    return fingerprints([text], [headings])[0]


def fingerprints(texts: Sequence[str], headings: Sequence[Sequence[str]]) -> list[int]:
    """For each text, a 64-bit SimHash of its word triples (each as often as it occurs; case
    and punctuation aside, and the lines that are its ``headings`` or Markdown headings: the
    same passage stands under other titles elsewhere; CJK as character pairs), as a signed
    integer: texts that differ in a few words (a page number, a running line) differ in a few
    bits (:func:`near_duplicates`); 0 for a short text. A document's chunks are done at once:
    numpy's cost per call, not per word, would otherwise dominate."""
    import numpy as np

    words = [
        _fingerprinted_words(text, titles) for text, titles in zip(texts, headings, strict=True)
    ]
    kept = [i for i, w in enumerate(words) if len(w) >= FINGERPRINT_MIN_WORDS]
    out = [0] * len(texts)
    if not kept:
        return out
    every = [word for i in kept for word in words[i]]
    codes = {word: _word_code(word) for word in set(every)}
    hashed = np.fromiter(map(codes.__getitem__, every), dtype=np.uint64, count=len(every))
    triples = _mixed(hashed[:-2] ^ _rotated(hashed[1:-1], 21) ^ _rotated(hashed[2:], 42))
    sizes = np.array([len(words[i]) for i in kept])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    # a text's triples start at its first word and stop two words before the next text's
    inside = np.ones(len(triples), dtype=bool)
    ends = starts + sizes
    for cut in (ends - 2, ends - 1):
        inside[cut[cut < len(triples)]] = False
    bits = np.unpackbits(triples.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    bits = bits * inside[:, None]
    ones = np.add.reduceat(bits, starts, axis=0, dtype=np.int64)
    votes = ones * 2 - (sizes - 2)[:, None]
    packed = np.packbits(votes > 0, axis=1, bitorder="little").view(np.int64)[:, 0]
    for i, value in zip(kept, packed.tolist(), strict=True):
        out[i] = value or 1
    return out


def _fingerprinted_words(text: str, headings: Sequence[str]) -> list[str]:
    titles = {heading_title(h) for h in headings}
    body = "\n".join(
        line
        for line in text.split("\n")
        if heading_title(line) not in titles and not _HEADING_LINE.match(line)
    )
    return index_terms(body).casefold().translate(_PUNCTUATION).split()


def _word_code(word: str) -> int:
    """A word as 64 bits, the same in every process (``hash`` is salted per process)."""
    data = word.encode()
    return zlib.crc32(data) | zlib.adler32(data) << 32


def _mixed(values: Any) -> Any:
    """SplitMix64's finalizer over a uint64 array: every input bit moves every output bit."""
    import numpy as np

    values = values ^ (values >> np.uint64(30))
    values = values * np.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> np.uint64(27))
    values = values * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def _rotated(values: Any, bits: int) -> Any:
    import numpy as np

    return (values << np.uint64(bits)) | (values >> np.uint64(64 - bits))


NEAR_DUPLICATE_BITS = 6
"""Fingerprints this many bits apart or fewer are the same passage: a word changed in a
passage of a few hundred words moves a few bits, while unrelated texts are about 32 apart (a
chance within 6 is below one in a million). A short passage's bits move more with a word
changed (fewer triples vote), so among short ones only the same text is found."""


def near_duplicates(a: int, b: int) -> bool:
    """Whether two fingerprints (:func:`fingerprint`) are of the same passage."""
    return bool(a and b) and ((a ^ b) & (2**64 - 1)).bit_count() <= NEAR_DUPLICATE_BITS


def phrase(query: str) -> str | None:
    """The phrase a quoted query asks for (None: not quoted)."""
    stripped = query.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == '"' and '"' not in stripped[1:-1]:
        return stripped[1:-1]
    return None


_WORD = re.compile(r"\w+")


def phrase_pattern(query: str) -> re.Pattern[str] | None:
    """What finds ``query``'s words in its order, one after another, whatever stands between
    them that is not a word (spaces, line ends, punctuation, case aside), in a text as the
    index holds it; None for a query of one word, or one in Chinese, Japanese or Korean,
    whose words the index holds as character pairs."""
    words = _WORD.findall(query)
    if len(words) < 2 or CJK_RUN.search(query):
        return None
    return re.compile(
        r"(?<!\w)" + r"\W+".join(re.escape(word) for word in words) + r"(?!\w)", re.IGNORECASE
    )


def any_words(query: str) -> str:
    """An unquoted query as the index spells text (CJK as character pairs), without the
    words that only ask (:data:`STOPWORDS`) unless it has no others: BM25 weighed "how",
    "which" and "does" in every question (question bench keyword doc@1 0.63 -> 0.64, hybrid
    doc@10 0.91 -> 0.92 and page@10 0.87 -> 0.88; known items the same)."""
    words = query.replace('"', " ").split()
    said = [word for word in words if "".join(_WORD.findall(word)).lower() not in STOPWORDS]
    return index_terms(" ".join(said or words))


def full_text_query(query: str) -> Any:
    """A quoted query is a phrase; anything else matches any of its words (BM25). Either is
    spelled as the index spells text (CJK as character pairs)."""
    from lance.query import MatchQuery, PhraseQuery

    quoted = phrase(query)
    if quoted is not None:
        return PhraseQuery(" ".join(index_terms(quoted).split()), TERMS)
    return MatchQuery(any_words(query), TERMS)
