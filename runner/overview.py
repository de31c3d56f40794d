"""What ``status`` shows, assembled once for the CLI, the web page, the API and assistants:
the queue's counts, rate and failures (:mod:`bucketdigest.monitor.status`) and the search
index's size and how far it is behind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bucketdigest.monitor.status import Status, collect_status
from bucketdigest.search import generation
from bucketdigest.search.index import IndexStats, SearchIndex
from bucketdigest.search.location import index_location
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import SearchIndexError
from bucketdigest.shared.store import Store


@dataclass(frozen=True)
class Overview:
    status: Status
    index: IndexStats | SearchIndexError | None
    """The index's statistics, why it cannot be read, or None when there is none yet."""

    @property
    def behind(self) -> int:
        """Done documents the index does not hold yet."""
        if not isinstance(self.index, IndexStats):
            return 0
        return max(0, self.status.counts["done"] - self.index.documents)

    def to_dict(self, told: Callable[[str], str] = str) -> dict[str, Any]:
        """The JSON form (``status --json``, ``/api/status``); ``told`` words an index error
        for whoever reads it."""
        index: dict[str, Any] | None = None
        if isinstance(self.index, SearchIndexError):
            index = {"error": told(str(self.index))}
        elif self.index is not None:
            index = {**self.index.to_dict(), "behind": self.behind}
        return {**self.status.to_dict(), "index": index}


def overview(store: Store, settings: StoreSettings) -> Overview:
    """The status of the bucket ``store`` opens (``settings`` names it, for its index)."""
    status = collect_status(store)
    try:
        searched = generation.current(store).current
        index: IndexStats | SearchIndexError | None = SearchIndex.describe(
            index_location(settings), searched
        )
    except SearchIndexError as exc:
        index = exc
    return Overview(status, index)


def watch(
    store: Store, settings: StoreSettings, every: float, stop: threading.Event
) -> Iterator[Overview]:
    """An overview now and every ``every`` seconds until ``stop`` is set (``status --watch``)."""
    while True:
        yield overview(store, settings)
        if stop.wait(every):
            return
