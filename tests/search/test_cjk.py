"""A few characters pasted from a Chinese, Japanese or Korean page find it by keyword: real text
(``tests/fixtures/cjk``) set in PDFs, digested by a real worker, indexed, searched."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.search.snippet import make_snippet
from bucketdigest.search.terms import CJK_RUN
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from tests.search.conftest import digest_folder, write_topics

TEXTS = Path(__file__).parents[1] / "fixtures" / "cjk"
LANGUAGES = ("zh", "ja", "ko")
PAGE_CHARS = 700


def _pdf(text: str, path: Path) -> None:
    """``text`` set page after page, lines broken wherever the page's width ends them."""
    doc = pymupdf.open()
    for paragraph in text.split("\n\n"):
        for start in range(0, len(paragraph), PAGE_CHARS):
            page = doc.new_page()
            body = paragraph[start : start + PAGE_CHARS]
            page.insert_htmlbox(pymupdf.Rect(60, 60, 540, 780), f"<p>{body}</p>")
    doc.save(path)


@pytest.fixture(scope="module")
def cjk_index(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    root = tmp_path_factory.mktemp("cjk")
    write_topics(root / "in")
    for language in LANGUAGES:
        text = (TEXTS / f"{language}.txt").read_text(encoding="utf-8")
        _pdf(text, root / "in" / f"{language}.pdf")
    store = LocalStore(root / "bucket")
    digest_folder(store, root / "in")
    settings = StoreSettings(bucket=str(root / "bucket"))
    index_bucket(store, settings)
    return Searcher.open(settings)


def _spans(language: str, count: int) -> list[str]:
    """``count`` spans of 6-10 characters, at least four of them CJK, from random places."""
    text = " ".join((TEXTS / f"{language}.txt").read_text(encoding="utf-8").split())
    rng = random.Random(language)
    spans: list[str] = []
    while len(spans) < count:
        size = rng.randint(6, 10)
        start = rng.randrange(len(text) - size)
        span = text[start : start + size]
        if sum(len(run) for run in CJK_RUN.findall(span)) >= 4:
            spans.append(span)
    return spans


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_few_pasted_characters_find_their_chunk_in_keyword_mode(
    cjk_index: Searcher, language: str
) -> None:
    spans = _spans(language, 30)
    found = 0
    for span in spans:
        hits = cjk_index.search(SearchRequest(span, mode=Mode.KEYWORD, limit=10))
        found += any(_squeezed(span) in _squeezed(hit.snippet.text) for hit in hits) or any(
            _squeezed(span) in _squeezed(text) for text in _chunk_texts(cjk_index, hits)
        )
    assert found / len(spans) >= 0.9, f"recall@10 {found / len(spans):.2f} for {language}"


def _chunk_texts(searcher: Searcher, hits: list) -> list[str]:
    ids = [hit.chunk_id for hit in hits]
    if not ids:
        return []
    quoted = ", ".join(f"'{i}'" for i in ids)
    rows = searcher.chunks.to_table(columns=["text"], filter=f"id IN ({quoted})").to_pylist()
    return [row["text"] for row in rows]


def test_english_search_is_unchanged_beside_cjk_text(cjk_index: Searcher) -> None:
    hits = cjk_index.search(SearchRequest("boarding the enemy ship", mode=Mode.KEYWORD))
    assert hits and hits[0].names == ("naval/broadsides.md",)


def test_the_pasted_characters_are_highlighted_in_the_snippet() -> None:
    snippet = make_snippet("東京都は日本の首都であり、世界有数の大都市である。", "世界有数の大都")
    assert snippet.marked() == "東京都は日本の首都であり、**世界有数の大都**市である。"


def test_a_question_in_chinese_around_a_few_of_the_pages_words_finds_the_page_in_hybrid(
    cjk_index: Searcher,
) -> None:
    """Most of a question's character pairs are its own wording; the English model cannot say
    the page is close in meaning, so the words it holds must be enough to keep it."""
    question = "为什么我的电脑上找不到网络安装程序"  # the page: 网络安装程序…非常适宜
    keyword = cjk_index.search(SearchRequest(question, mode=Mode.KEYWORD, limit=10))
    assert keyword and keyword[0].names == ("zh.pdf",)
    hits = cjk_index.search(SearchRequest(question, mode=Mode.HYBRID, limit=10))
    assert hits and hits[0].names == ("zh.pdf",)
    assert "网络安装程序" in _squeezed(hits[0].snippet.text)
