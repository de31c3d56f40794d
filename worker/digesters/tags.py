"""tags: the document's keywords, by YAKE (statistical, offline, no model).

YAKE scores a phrase and the phrases inside it apart, so its list repeats itself (``Doncaster
Committee give``, ``Doncaster Committee``, ``Doncaster``). Of a phrase and one it contains only
one is kept: the one it contains when the phrase only adds lower-case words to a name
(``give``), else the better scored.

The text is the document's body: its headings (counted twice: they say what a section is
about) and its paragraphs and list items, read off the pages' blocks. Tables, captions, code
and formulas are left out (a table's header row, "Bytes Docs Tokens", is no topic), as are the
running heads and page numbers (:mod:`~bucketdigest.worker.digesters.doc_to_markdown.running`)
and doubtful readings. A document with little body text (a form, a spreadsheet) is tagged
from its tables' rows too, still without their header rows; one with none of these (a page
of labels the converter set apart), from all its text. In every case a phrase made of table
header words alone (words the body does not use) is no tag: a form's column labels repeat in
its rows.

YAKE takes a phrase for words between spaces, so some of its phrases are no topic: a phrase
that says a word twice ("Abstract Abstract", "Haruki EJIRI Haruki": a heading read with its
running head, a list of names), and one with a "word" of more than :data:`MAX_CJK_WORD`
Chinese or Japanese characters (a whole unspaced sentence).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.pagetext import CJK, document_pages, plain_text
from bucketdigest.shared.result import TAGS
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.document_blocks import Block, page_blocks

TOP = 20
CANDIDATES = 3 * TOP
"""Phrases asked of YAKE, so that TOP remain once those repeating another are gone."""
BODY_KINDS = frozenset({"paragraph", "list_item"})
HEADING_WEIGHT = 2
MIN_BODY_WORDS = 40
"""Fewer words of body text than this: the document is tagged from all its text."""
MAX_CJK_WORD = 8
"""More Chinese or Japanese characters than this between spaces are a run of words (their
words are one to four characters), not a word a tag can be made of."""
_CJK_RUN = re.compile(f"[{CJK}]{{{MAX_CJK_WORD + 1}}}")


PageBlocks = Sequence[Sequence[Block]]
"""Each page's blocks, read once from its Markdown (:func:`page_blocks`)."""


def body_text(blocks: PageBlocks, tables: bool = False) -> str:
    """The headings (each :data:`HEADING_WEIGHT` times), paragraphs and list items of the
    pages of ``blocks``, in order; with ``tables`` also the captions and the cells of tables'
    rows under their header rows (what a form or a sheet says)."""
    parts: list[str] = []
    for block in (block for page in blocks for block in page):
        if block.kind == "heading":
            parts += [block.text] * HEADING_WEIGHT
        elif block.kind in BODY_KINDS or (tables and block.kind == "caption"):
            parts.append(block.text)
        elif tables and block.kind == "table":
            rows = [r for r in block.rows or [] if not any(c["header"] for c in r)]
            parts += [". ".join(c["text"] for c in row if c["text"]) for row in rows]
    return "\n\n".join(part for part in parts if part)


def _header_words(blocks: PageBlocks) -> set[str]:
    """The words of the tables' header cells of the pages of ``blocks``, case aside."""
    return {
        word
        for page in blocks
        for block in page
        if block.kind == "table"
        for row in block.rows or []
        for cell in row
        if cell["header"]
        for word in cell["text"].casefold().split()
    }


def _words(phrase: str) -> tuple[str, ...]:
    return tuple(phrase.casefold().split())


def _inside(small: tuple[str, ...], large: tuple[str, ...]) -> bool:
    return len(small) < len(large) and any(
        large[start : start + len(small)] == small for start in range(len(large) - len(small) + 1)
    )


def _runs_past_a_name(name: str, phrase: str) -> bool:
    """Whether ``phrase`` is the name ``name`` (capitalised words) and lower-case words."""
    added = [word for word in phrase.split() if word.casefold() not in _words(name)]
    return all(word[:1].isupper() for word in name.split()) and all(
        word[:1].islower() for word in added
    )


def _no_topic(phrase: str, words: tuple[str, ...]) -> bool:
    """A phrase that says a word twice, or holds a run of unspaced words."""
    return len(set(words)) < len(words) or _CJK_RUN.search(phrase) is not None


def distinct(found: Sequence[tuple[str, float]], top: int = TOP) -> list[tuple[str, float]]:
    """YAKE's ``(phrase, score)`` pairs, best (lowest) first, without a phrase that another kept
    one contains or that contains one, and without the phrases that are no topic (see the
    module's docstring); at most ``top``."""
    kept: list[tuple[str, float]] = []
    for phrase, score in sorted(found, key=lambda pair: pair[1]):
        words = _words(phrase)
        if _no_topic(phrase, words) or any(_words(other) == words for other, _ in kept):
            continue
        holding = [n for n, (other, _) in enumerate(kept) if _inside(words, _words(other))]
        if holding:
            if all(_runs_past_a_name(phrase, kept[n][0]) for n in holding):
                # the name, not the name and a verb after it
                kept[holding[0]] = (phrase, score)
                kept = [pair for n, pair in enumerate(kept) if n not in holding[1:]]
            continue
        if not any(_inside(_words(other), words) for other, _ in kept):
            kept.append((phrase, score))
    return kept[:top]


def document_tags(pages: Sequence[str]) -> list[tuple[str, float]]:
    """The tags of a document of ``pages`` (each page's Markdown): (phrase, YAKE score), best
    first; from its :func:`body_text`, or all its text when it has little body."""
    import yake

    blocks = [page_blocks(page, number) for number, page in enumerate(pages, start=1)]
    body = text = body_text(blocks)
    if len(text.split()) < MIN_BODY_WORDS:
        text = body_text(blocks, tables=True)
    if not text.strip():
        text = "\n\n".join(plain_text(page) for page in pages)
    if not text.strip():
        return []
    extractor = yake.KeywordExtractor(lan="en", n=3, top=CANDIDATES)
    found = extractor.extract_keywords(text)
    headers = _header_words(blocks) - set(body.casefold().split())
    return distinct([(p, score) for p, score in found if not set(_words(p)) <= headers])


class Tags(Digester):
    name = "tags"
    label = "Tags"
    description = f"Up to {TOP} keywords and key phrases (YAKE), best first, as tags.json."
    version = "4"
    outputs = ("tags",)
    needs = ("markdown", "ocr", "web-page")
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        found = document_tags(document_pages(ctx.tree, doubtful=False))
        tags = [{"keyword": keyword, "score": round(score, 6)} for keyword, score in found]
        data = json.dumps(tags, indent=2, ensure_ascii=False) + "\n"
        return {"tags": Produced({TAGS: data.encode()}, [t["keyword"] for t in tags])}
