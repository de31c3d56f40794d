"""summary: a short summary, extractive (offline, by default) or from an LLM when configured."""

from __future__ import annotations

import math
import re
from collections import Counter

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.pagetext import document_text
from bucketdigest.shared.result import SUMMARY
from bucketdigest.worker.digester import DigestContext, Digester, Produced

SENTENCES = 5

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}")
_WORD = re.compile(r"[^\W\d_]{2,}")
_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each every few for
from further had has have having he her here hers herself him himself his how i if in into is
it its itself just may me might more most must my myself no nor not now of off on once one
only or other our ours ourselves out over own per same she should so some such than that the
their theirs them themselves then there these they this those through to too two under until
up upon very was we were what when where which while who whom why will with would you your
yours yourself yourselves
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _sentences(text: str) -> list[str]:
    parts = (" ".join(part.split()) for part in _SENTENCE_END.split(text))
    return [part for part in parts if 6 <= len(part.split()) <= 60]


def extractive_summary(text: str, count: int = SENTENCES) -> str:
    """The ``count`` sentences whose content words are most frequent in the whole text, in
    their original order (a classic frequency summariser; earlier sentences win ties)."""
    sentences = _sentences(text)
    frequency = Counter(
        word for word in map(str.lower, _WORD.findall(text)) if word not in _STOPWORDS
    )
    if not sentences or not frequency:
        return ""
    top = max(frequency.values())

    def score(index: int) -> float:
        words = [w for w in map(str.lower, _WORD.findall(sentences[index])) if w in frequency]
        if not words:
            return 0.0
        return sum(frequency[w] / top for w in set(words)) / math.sqrt(len(words))

    ranked = sorted(range(len(sentences)), key=lambda i: (-score(i), i))[:count]
    return " ".join(sentences[i] for i in sorted(ranked))


class Summary(Digester):
    name = "summary"
    label = "Summary"
    description = (
        "A short summary as summary.md: extractive (key sentences) offline, or written by an "
        "LLM when an OpenAI-compatible endpoint is configured (--llm-url, --llm-model)."
    )
    version = "1"
    outputs = ("summary",)
    needs = ("markdown", "ocr", "web-page")
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        text = document_text(ctx.tree)
        llm = ctx.settings.llm
        if llm is not None and text.strip():
            from bucketdigest.worker.llm import summarise

            summary = summarise(text, llm)
            content: dict[str, object] = {
                "producer": "llm",
                "model": llm.model,
                "endpoint": llm.url,
            }
            content["truncated_input"] = len(text) > llm.max_input_chars
        else:
            # plain sentences written as Markdown: printed brackets must not read as a link
            summary = extractive_summary(text).replace("](", "\\](")
            content = {"producer": "extractive", "sentences": SENTENCES}
        content["text"] = summary
        data = (summary + "\n").encode() if summary else b""
        return {"summary": Produced({SUMMARY: data}, content)}
