"""A short excerpt of a hit's text around the query's words, with where those words are.

Words are matched loosely (case, and common English endings: "grappling" finds "grapple"),
as the keyword index's stemmer matched them; the window with the most matches wins.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bucketdigest.search.terms import CJK_RUN, STOPWORDS, cjk_pairs
from bucketdigest.shared.pagetext import readable_text

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
WINDOW_WIDTHS = 6
"""A snippet is made from the lines of a chunk within this many snippet widths around its
densest matches (the rest would be made readable only to be cut away)."""
_ENDINGS = ("ings", "ing", "edly", "ed", "es", "s", "e", "ly")


@dataclass(frozen=True)
class Snippet:
    """``text`` with ``highlights`` as (start, end) offsets of matched words in it."""

    text: str
    highlights: tuple[tuple[int, int], ...]

    def marked(self, before: str = "**", after: str = "**") -> str:
        """The text with each highlight wrapped in ``before`` and ``after``."""
        out, last = [], 0
        for start, end in self.highlights:
            out += [self.text[last:start], before, self.text[start:end], after]
            last = end
        return "".join([*out, self.text[last:]])


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    word = word.lower()
    for ending in _ENDINGS:
        if len(word) - len(ending) >= 3 and word.endswith(ending):
            return word[: -len(ending)]
    return word


def query_stems(query: str) -> set[str]:
    words = [w for w in _WORD.findall(query) if w.lower() not in STOPWORDS]
    return {stem(w) for w in words}


@functools.lru_cache(maxsize=256)
def _asked(query: str) -> frozenset[str]:
    """The query's stems, CJK runs aside."""
    return frozenset(s for s in query_stems(query) if not CJK_RUN.match(s))


@functools.lru_cache(maxsize=256)
def _asked_pairs(query: str) -> frozenset[str]:
    """The character pairs of the query's CJK runs."""
    return frozenset(cjk_pairs(query))


def _stem_matches(text: str, query: str) -> list[tuple[int, int, str]]:
    """Where ``text``'s words that stem to one of the query's stand (start, end), with that
    stem. Only the places where a stem occurs are looked at (found by ``str.find`` in the
    lower-cased text): a tenth of the cost of stemming every word, which a search would do
    for every candidate and every hit."""
    asked = _asked(query)
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter whose lower case is longer: places would shift
        return [
            (*m.span(), stem(m.group())) for m in _WORD.finditer(text) if stem(m.group()) in asked
        ]
    found: dict[int, tuple[int, int, str]] = {}
    for wanted in asked:
        at = lowered.find(wanted)
        while at >= 0:
            word = _WORD.match(lowered, at)
            before = lowered[at - 1] if at else " "
            if word and not before.isalnum():
                stemmed = stem(word.group())
                if stemmed in asked:
                    found[at] = (at, word.end(), stemmed)
            at = lowered.find(wanted, at + 1)
    return [found[at] for at in sorted(found)]


def words_held(query: str, text: str) -> set[str]:
    """The query's words (stemmed, stop words aside; CJK as character pairs, as the index
    reads it) that ``text`` holds. Each stem is looked for until a word of it is found (a
    stem is its words' beginning: :func:`stem` only cuts endings): hybrid search asks this
    of its every keyword candidate's whole text, and finding every place cost twice as much."""
    asked = _asked(query)
    lowered = text.lower()
    if len(lowered) != len(text):  # places would shift: see _stem_matches
        held = {stemmed for _, _, stemmed in _stem_matches(text, query)}
    else:
        held = set()
        for wanted in asked:
            at = lowered.find(wanted)
            while at >= 0 and wanted not in held:
                word = None if at and lowered[at - 1].isalnum() else _WORD.match(lowered, at)
                if word and stem(word.group()) in asked:
                    held.add(stem(word.group()))
                at = lowered.find(wanted, at + 1)
    return held | {pair for pair in _asked_pairs(query) if pair in text}


def words_held_each(query: str, texts: Sequence[str]) -> list[set[str]]:
    """:func:`words_held` of each of ``texts``, looked for in one pass over them all (a hit's
    blocks are tens of short texts: one call each cost more than the looking)."""
    joined = "\n".join(texts)
    starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
    held: list[set[str]] = [set() for _ in texts]
    for at, _, stemmed in _stem_matches(joined, query):
        held[bisect.bisect_right(starts, at) - 1].add(stemmed)
    pairs = _asked_pairs(query)
    if pairs:
        for words, text in zip(held, texts, strict=True):
            words |= {pair for pair in pairs if pair in text}
    return held


def query_words_held(query: str, text: str) -> tuple[int, int]:
    """How many of the query's words (see :func:`words_held`) ``text`` holds, and how many
    there are."""
    return len(words_held(query, text)), len(_asked(query)) + len(_asked_pairs(query))


def _cjk_matches(text: str, query: str) -> list[tuple[int, int]]:
    """Where the character pairs of the query's CJK runs occur in ``text``, overlaps merged."""
    pairs = _asked_pairs(query)
    if not pairs:
        return []
    spans: list[tuple[int, int]] = []
    for run in CJK_RUN.finditer(text):
        chars, base = run.group(), run.start()
        width = 1 if len(chars) == 1 else 2
        for i in range(len(chars) - width + 1):
            if chars[i : i + width] in pairs:
                start, end = base + i, base + i + width
                if spans and start <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], end)
                else:
                    spans.append((start, end))
    return spans


def _matches(text: str, query: str) -> list[tuple[int, int]]:
    return sorted([(a, b) for a, b, _ in _stem_matches(text, query)] + _cjk_matches(text, query))


def _densest(matches: list[tuple[int, int]], width: int) -> int:
    """Where the ``width`` characters holding the most matches begin (at a match; the first
    such). ``matches`` are in order, so each window's count is two bisections: counting
    them one by one was a tenth of a search's time on a long chunk of common words."""
    starts = [start for start, _ in matches]
    return max(
        starts,
        key=lambda at: bisect.bisect_left(starts, at + width) - bisect.bisect_left(starts, at),
    )


def _around_matches(text: str, query: str, width: int) -> tuple[str, bool, bool]:
    """The whole lines of Markdown ``text`` around its densest matches, a few snippets wide,
    and whether lines before and after were left out: making a long chunk readable costs a
    search (ten hits) milliseconds, and a snippet shows a few hundred characters of it."""
    if len(text) <= WINDOW_WIDTHS * width:
        return text, False, False
    matches = _matches(text, query)
    centre = _densest(matches, width) if matches else 0
    start = text.rfind("\n", 0, max(0, centre - WINDOW_WIDTHS // 2 * width)) + 1
    end = text.find("\n", min(len(text), centre + WINDOW_WIDTHS // 2 * width))
    end = len(text) if end < 0 else end
    return text[start:end], start > 0, end < len(text)


def make_snippet(text: str, query: str, width: int = 240) -> Snippet:
    """At most about ``width`` characters of ``text`` as plain text (no Markdown: tables as
    "cell; cell." rows), centred on the query's words."""
    text, cut_before, cut_after = _around_matches(text, query, width)
    text = " ".join(readable_text(text).split())
    matches = _matches(text, query)
    start = 0
    if matches:
        best = _densest(matches, width)
        start = max(0, best - width // 4)
        if start:
            space = text.rfind(" ", 0, start)
            start = space + 1 if space >= 0 and start - space < 30 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    prefix = "…" if start or cut_before else ""
    suffix = "…" if end < len(text) or cut_after else ""
    body = text[start:end]
    shift = len(prefix) - start
    highlights = tuple((s + shift, e + shift) for s, e in matches if s >= start and e <= end)
    return Snippet(prefix + body + suffix, highlights)
