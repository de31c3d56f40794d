"""Removing documents from a bucket and from its search index in one go (``purge``, ``rm``):
the monitor's purge deletes the objects, then the index catches up, dropping their rows."""

from __future__ import annotations

from dataclasses import dataclass

from bucketdigest.monitor.purge import PurgeRule, purge, remove_document
from bucketdigest.runner.listing import find_digest
from bucketdigest.search.indexer import IndexReport, index_bucket
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.records import PurgeRun

INDEX_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Removal:
    """A purge run, and the index catching up after it (None: nothing was removed)."""

    run: PurgeRun
    index: IndexReport | None


def _reindexed(settings: StoreSettings, run: PurgeRun) -> Removal:
    if not run.purged or run.dry_run:
        return Removal(run, None)
    store = open_store(settings, self_test=False)
    return Removal(run, index_bucket(store, settings, wait=INDEX_WAIT_SECONDS))


def purge_bucket(settings: StoreSettings, rule: PurgeRule, *, dry_run: bool = False) -> Removal:
    """``bucketdigest purge``."""
    return _reindexed(settings, purge(open_store(settings), rule, dry_run=dry_run))


def remove(settings: StoreSettings, path_or_hash: str) -> Removal:
    """``bucketdigest rm``: one document, named by hash or by an ingested path."""
    digest = find_digest(settings, path_or_hash)
    return _reindexed(settings, remove_document(open_store(settings), digest))
