"""What a reader sees of a hit, on a bucket real workers filled: snippets in plain text."""

from __future__ import annotations

import re
from pathlib import Path

from bucketdigest.runner.passages import read_chunks
from bucketdigest.search.snippet import make_snippet
from bucketdigest.shared.stores.local import LocalStore
from tests.serve.conftest import Served

MARKDOWN = re.compile(r"\*\*|(?<!\w)_[^_\s]+_(?!\w)|\||^#|!\[|\]\(|<!--")


def test_every_chunk_of_a_real_bucket_snippets_without_markdown(served: Served) -> None:
    store = LocalStore(Path(served.settings.bucket))
    shown = tables = 0
    for digest in served.digests.values():
        for chunk in read_chunks(store, digest):
            snippet = make_snippet(chunk["text"], "rules", width=10_000).text
            assert not MARKDOWN.search(snippet), snippet
            shown += 1
            tables += "|" in chunk["text"]
    assert shown > 30 and tables, "the chunks, tables among them, were read"
