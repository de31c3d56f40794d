"""How hybrid search scores a candidate of either ranking (:func:`fused`): the floors a hit
must reach, the weight of the words against the meaning (by the kind of query), the document's
own closeness, the words in the query's order, a second reading of meaning in word vectors, and
the clear winner of one ranking kept near the top; and when one document leads the others by
far (:mod:`.picking`). Measured on known-item queries and on questions in a person's own words
over the real-world corpus (scripts/bench/ranking.py, questions.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bucketdigest.search.flat import OFFSET
from bucketdigest.search.index import TERMS
from bucketdigest.search.snippet import query_words_held
from bucketdigest.search.terms import phrase_pattern

SIMILARITY_FLOOR = 0.25
"""A semantic hit's cosine similarity must reach this to be a hit at all (all-MiniLM-L6-v2:
unrelated passages score about 0 to 0.15): without it every search returns its limit, OCR noise
included. A keyword hit must match the query's words; in hybrid, one holding less than
:data:`HELD_FLOOR` of them must reach this similarity too."""
HELD_FLOOR = 0.5
"""Hybrid: a passage holding this share of the query's words (a code, a name, half a pasted
span) or more than one of them is a hit whatever its meaning; one sharing a single word of a
longer query (a word of a question the documents cannot answer) must come close in meaning, so
such a question gets no hit rather than weak ones with negative scores. Two words held keep a
hit the model cannot vouch for: its English model reads neither CJK nor an image's few words
as close to a question about them."""


KEYWORD_WEIGHT = 0.6
"""Hybrid: a hit's score is ``weight * words + (1 - weight) * cosine``, both computed for every
candidate of either ranking (a keyword hit's similarity from its vector; a semantic hit
without the query's words scores 0 for them). ``words`` is its BM25 over the best one, times
the square of the share of the query's words it holds: a passage holding the whole pasted
sentence leads as keyword search leads, while one that shares a single common word with a
question asked in other words does not outweigh the passage that means it. The weight is
this one when some candidate holds every word of the query (a pasted span, a known item),
:data:`QUESTION_KEYWORD_WEIGHT` when none does, :data:`FOREIGN_KEYWORD_WEIGHT` for a query
mostly in a script other than Latin. Measured on known-item queries and on questions in a
person's own words over the real-world corpus (scripts/bench/ranking.py, questions.py)."""
QUESTION_KEYWORD_WEIGHT = 0.45
"""Hybrid, when no candidate holds every word of the query: a question in other words than
the passage, where meaning tells more than the words shared (doc@1 on the question bench
0.66 against 0.60 with :data:`KEYWORD_WEIGHT`)."""
FOREIGN_KEYWORD_WEIGHT = 0.9
"""Hybrid, for a query mostly in a script other than Latin (Chinese, Japanese, Arabic...):
the embedding model (all-MiniLM-L6-v2) was trained on English, and its neighbours of such a
query are noise; the words (CJK as character pairs) decide."""
DOCUMENT_WEIGHT = 0.2
"""Hybrid, questions in other words: the cosine between the query and the passage's document
(the mean of its chunks' vectors) is added at this weight, so a passage of the document about
the question leads a passage that only shares its words (doc@1 0.72 against 0.69 without)."""
PHRASE_WEIGHT = 0.3
"""Hybrid: added to a passage that holds the query's words in its order, one after another
(:func:`.terms.phrase_pattern`), when the query is two words or more: a pasted span or a
heading names the passage that says it so, where BM25 and meaning rank every passage holding
the same words alike (the same license sentence in a dozen manuals, a phrase of the text in
two sections). Known items, hybrid R@1: exact spans 0.89 -> 0.98, headings 0.41 -> 0.49
(0.2: 0.96 and 0.49; 0.1: 0.94 and 0.49); questions in other words the same (they rarely hold
every word)."""
WORD_WEIGHT = 0.3
"""Hybrid, questions in other words (no candidate holds every word of the query): a passage's
cosine with the query in static word vectors (WordLlama, :mod:`bucketdigest.shared.word_embedding`)
is added at this weight: a second reading of meaning that errs elsewhere than all-MiniLM-L6-v2.
On the question bench (227 questions), against none: 0.2 put the right document first for 3
more and 1 fewer, 0.25 +6 -1, 0.3 +7 -1 (doc@1 0.73 -> 0.75), 0.35 +7 -1, 0.4 +8 -2, with 198
answering pages in the top ten against 199 (0.5: 194). A query some passage holds whole (a
pasted span, a known item) is left to its words: added there too, it cost exact spans R@1
0.98 -> 0.97."""
LEADING_DOCUMENT_MARGIN = 0.1
"""Hybrid: a document whose best passage scores this much above every other document's best
is the one the question is about, and its passages are not capped per document
(:func:`.picking.picked`): on the question bench the right document's page was then among
the ten hits for 0.87 of the questions against 0.86 (0.86 against 0.83 where the document
has 15 passages or more), the documents found the same; 108 of 227 questions lead so, 96 of
them with the right document."""
_LATIN_END = 0x250
"""Letters below this code point are Latin (Basic, Supplement, Extended-A and -B)."""
CLEAR_WINNER_PLACE = 2
"""Hybrid: a hit either ranking puts first by a clear margin stands no lower than this. A
table that says "Pop." where the question says "population" is semantic search's first hit
and keyword search never returns it; a weighted sum alone would rank it below every hit
that shares a word with the question."""
SEMANTIC_MARGIN = 0.05
"""Cosine similarity by which semantic search's first hit leads its second to be clear
(all-MiniLM-L6-v2: neighbouring answers to one question lie within about 0.02)."""
KEYWORD_MARGIN = 1.5
"""How many times the second's BM25 keyword search's first hit must score to be clear."""


def keyword_weight(query: str, complete: bool) -> float:
    """The weight of the words in a hybrid score (:data:`KEYWORD_WEIGHT`): ``complete`` when
    some candidate holds every word of ``query``."""
    letters = [ch for ch in query if ch.isalpha()]
    latin = sum(ord(ch) < _LATIN_END for ch in letters)
    if letters and latin < len(letters) / 2:
        return FOREIGN_KEYWORD_WEIGHT
    return KEYWORD_WEIGHT if complete else QUESTION_KEYWORD_WEIGHT


def clear_winner(
    scores: list[float], margin: float, *, relative: bool = False, floor: float | None = None
) -> bool:
    """Whether a ranking's first score leads its second by ``margin`` (a difference, or with
    ``relative`` a ratio); a lone hit leads ``floor`` so, or by its being alone without one
    (a lone semantic hit just over the relevance floor is no clear winner)."""
    if not scores:
        return False
    second = scores[1] if len(scores) > 1 else floor
    if second is None:
        return True
    first = scores[0]
    return first >= second * margin if relative else first - second >= margin


def lifted(ranked: list[tuple[int, float]], offset: int) -> list[tuple[int, float]]:
    """``ranked`` with ``offset`` raised to :data:`CLEAR_WINNER_PLACE` if it stands lower (its
    score just above the one it passes, so scores still fall down the list)."""
    place = next((i for i, (o, _) in enumerate(ranked) if o == offset), None)
    top = CLEAR_WINNER_PLACE - 1
    if place is None or place <= top:
        return ranked
    score = ranked[top][1] + 1e-6
    if top:
        score = min(score, ranked[top - 1][1])
    return [*ranked[:top], (offset, score), *[p for p in ranked[top:] if p[0] != offset]]


def best_first(ranked: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """Rows (offset, score) by score, best first; equal scores (the same passage in two
    documents) in the rows' order in the table, not in the order Lance gave them, which
    varies between concurrent searches: the same search shows the same copy."""
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))


def fused(
    query: str,
    keyword: list[dict[str, Any]],
    semantic: list[dict[str, Any]],
    similarity: Callable[[dict[str, Any]], float],
    about: Callable[[], dict[str, float]],
    word_similarity: Callable[[dict[str, Any]], float],
) -> list[tuple[int, float]]:
    """Both rankings' candidates (rows with their ``OFFSET``; ``keyword``'s with BM25's
    ``_score`` and their ``TERMS``, ``semantic``'s with their cosine ``_distance``) scored by
    both measures, best first: ``similarity`` gives a keyword candidate's cosine with the
    query, ``about`` each candidate document's (asked only for a question in other words, see
    :data:`DOCUMENT_WEIGHT`), ``word_similarity`` a candidate's cosine in word vectors (asked
    only for such a question too, see :data:`WORD_WEIGHT`). A clear winner of either ranking
    stands no lower than :data:`CLEAR_WINNER_PLACE`."""
    best = max((r["_score"] for r in keyword), default=0.0) or 1.0
    counts = {r[OFFSET]: query_words_held(query, r[TERMS]) for r in keyword}
    held = {offset: found / asked if asked else 1.0 for offset, (found, asked) in counts.items()}
    complete = max(held.values(), default=0.0) >= 1.0
    weight = keyword_weight(query, complete)
    documents = {} if complete else about()
    in_order = phrase_pattern(query) if complete else None

    def by_words(row: dict[str, Any]) -> float:
        """The word vectors' share of a question's score (none asked for a pasted span)."""
        return 0.0 if complete else WORD_WEIGHT * word_similarity(row)

    scored: dict[int, float] = {}
    for row in keyword:
        cosine = similarity(row)
        weak = held[row[OFFSET]] < HELD_FLOOR and counts[row[OFFSET]][0] < 2
        if weak and cosine < SIMILARITY_FLOOR:
            continue  # a word in common, nothing in meaning: below the floor
        words = row["_score"] / best * held[row[OFFSET]] ** 2
        as_asked = (
            in_order is not None
            and held[row[OFFSET]] >= 1.0
            and in_order.search(row[TERMS]) is not None
        )
        scored[row[OFFSET]] = (
            weight * words
            + (1 - weight) * cosine
            + DOCUMENT_WEIGHT * documents.get(row.get("digest", ""), 0.0)
            + PHRASE_WEIGHT * as_asked
            + by_words(row)
        )
    for row in semantic:
        if row[OFFSET] not in scored:
            cosine = 1.0 - float(row["_distance"])
            scored[row[OFFSET]] = (
                (1 - weight) * cosine
                + DOCUMENT_WEIGHT * documents.get(row.get("digest", ""), 0.0)
                + by_words(row)
            )
    ranked = best_first(scored.items())
    winners = [
        clear_winner(
            [1.0 - float(r["_distance"]) for r in semantic], SEMANTIC_MARGIN, floor=SIMILARITY_FLOOR
        ),
        clear_winner([float(r["_score"]) for r in keyword], KEYWORD_MARGIN, relative=True),
    ]
    for winner, rows in zip(winners, (semantic, keyword), strict=True):
        if winner:
            ranked = lifted(ranked, rows[0][OFFSET])
    return ranked
