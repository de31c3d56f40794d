"""Isolating a page that kills the converter, within one job attempt.

doc-to-markdown marks the pages it is converting in its partial folder (``converting.json``,
see ``doc_to_markdown.ranges``). When the digester process crashes or is stopped at its time
limit while such a mark is there, the job starts the digester again at once instead of failing
the attempt: it finds the mark and converts that range page by page, keeping each page, and a
page it dies on alone gets its plain text. So a poisoned page costs a few restarts and its own
layout, not three attempts and the document.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bucketdigest.worker.digesters.doc_to_markdown.ranges import died_converting
from bucketdigest.worker.sandbox import ChildDied

RESTARTS = 6
"""Restarts within one call: one to go page by page, then one per page that kills it."""

T = TypeVar("T")
log = logging.getLogger(__name__)


def call_isolating_pages(call: Callable[[], T], partial: Path) -> T:
    """``call()``, made again after a ChildDied while ``partial`` holds a conversion mark."""
    restarts = 0
    while True:
        try:
            return call()
        except ChildDied as exc:
            if restarts == RESTARTS or not died_converting(partial):
                raise
            restarts += 1
            log.warning("the converter process died (%s); converting page by page", exc)
