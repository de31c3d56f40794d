"""A small table's keyword ranking in memory: BM25 over its terms exactly as Lance's full-text
index scores them, so that a keyword query does not ask Lance.

Under load, Lance's full-text query was about half of a server's busy time on the real-world
corpus (20 clients, py-spy), many times what the same query costs alone. The words are the
index's own: each text is tokenized by ``lance.tokenize`` with the settings the index was built
with (its stemmer, stop words, folding), and scored with Lance's BM25 (K1, B, its idf, a word
asked twice counted twice), so a row's score is Lance's to a float's last bits. A searcher
reads one version of the index, so the words it holds stay right for as long as it searches.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

K1 = np.float32(1.2)
B = np.float32(0.75)
"""Lance's BM25 parameters (``lance-index``'s ``scorer.rs``)."""
TOKENIZER_SETTINGS = (
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "custom_stop_words",
    "ascii_folding",
)
"""The settings of a full-text index (as its statistics give them) that shape its words."""


def tokenizer_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``lance.tokenize`` that spell text as the index whose
    ``params`` these are spells it."""
    return {name: params[name] for name in TOKENIZER_SETTINGS if name in params}


def _words(text: str, tokenizer: Mapping[str, Any]) -> list[str]:
    import lance

    return [token.text for token in lance.tokenize(text, **tokenizer)]


@dataclass(frozen=True)
class HeldWords:
    """Each word's rows and their BM25 weights."""

    spans: dict[str, tuple[int, int, float]]
    """Word → where its rows stand in :attr:`places` and :attr:`weights` (start, end), and
    its idf (a float32's value)."""
    places: np.ndarray
    """The rows holding each word (their places in :attr:`offsets`), word by word."""
    weights: np.ndarray
    """For each of :attr:`places`, the word's term weight in that row: how often the row
    holds it, against the row's length (Lance's ``doc_weight``)."""
    documents: int
    """The rows holding a word (what the index's statistics count)."""
    offsets: np.ndarray
    """Each place's row offset in its table."""
    tokenizer: dict[str, Any]

    @classmethod
    def of(
        cls, texts: Sequence[str | None], offsets: np.ndarray, tokenizer: Mapping[str, Any]
    ) -> HeldWords:
        """The words of ``texts`` (a table's terms), the rows at ``offsets``."""
        ids: dict[str, int] = {}
        held: list[int] = []  # (word id, place, how often) of every word of every row
        places: list[int] = []
        freqs: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.float32)
        for place, text in enumerate(texts):
            count = Counter(_words(text or "", tokenizer))
            lengths[place] = sum(count.values())
            held += [ids.setdefault(word, len(ids)) for word in count]
            places += [place] * len(count)
            freqs += count.values()
        rows = int(np.count_nonzero(lengths))  # Lance counts a row without words nowhere
        average = np.float32(lengths.sum(dtype=np.float64)) / np.float32(max(rows, 1))
        norms = K1 * (np.float32(1) - B + B * lengths / (average or np.float32(1)))
        order = np.argsort(np.array(held, dtype=np.int64), kind="stable")
        at = np.array(places, dtype=np.int32)[order]
        freq = np.array(freqs, dtype=np.float32)[order]
        weights = (K1 + np.float32(1)) * freq / (freq + norms[at])
        docs = np.bincount(np.array(held, dtype=np.int64), minlength=len(ids)).astype(np.float32)
        idf = np.log((np.float32(rows) - docs + np.float32(0.5)) / (docs + np.float32(0.5)) + 1)
        ends = np.cumsum(docs.astype(np.int64))
        starts = ends - docs.astype(np.int64)
        spans = dict(
            zip(ids, zip(starts.tolist(), ends.tolist(), idf.tolist(), strict=True), strict=True)
        )
        return cls(spans, at, weights, rows, np.asarray(offsets, dtype=np.int64), dict(tokenizer))

    def ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best rows holding a word of ``query`` (their offsets), with their scores,
        best first; equal scores by offset."""
        scores = np.zeros(len(self.offsets), dtype=np.float32)
        for word in _words(query, self.tokenizer):
            span = self.spans.get(word)
            if span is not None:
                start, end, idf = span
                scores[self.places[start:end]] += idf * self.weights[start:end]
        found = np.flatnonzero(scores > 0)
        if k <= 0 or not len(found):
            return []
        if len(found) > k:
            kth = np.partition(scores[found], len(found) - k)[len(found) - k]
            found = found[scores[found] >= kth]
        best = found[np.lexsort((self.offsets[found], -scores[found]))][:k]
        return [(int(self.offsets[place]), float(scores[place])) for place in best]


def as_indexed(
    table: Any, index: str, texts: Sequence[str | None], offsets: np.ndarray
) -> HeldWords | None:
    """The words of ``texts`` (``table``'s rows at ``offsets``: every row it holds) when its
    full-text index ``index`` scores exactly those rows: none it has yet to cover, none it
    counts that were deleted since it was built (its statistics would count other rows than
    these, and score them otherwise). None otherwise: the index ranks."""
    try:
        stats = table.stats.index_stats(index)
    except (ValueError, OSError, KeyError) as exc:
        log.info("keywords ranked by the index: its statistics cannot be read (%s)", exc)
        return None
    parts = stats.get("indices") or []
    if not parts or stats.get("num_unindexed_rows"):
        return None
    words = HeldWords.of(texts, offsets, tokenizer_of(parts[0].get("params") or {}))
    indexed = sum(int(part.get("num_docs", -1)) for part in parts)
    return words if indexed == words.documents else None
