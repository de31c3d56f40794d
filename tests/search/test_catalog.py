"""``ls`` at scale: the index answers for the documents it holds, the registry for the rest,
with the same answer as reading every registry record."""

from __future__ import annotations

from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.catalog import catalog
from bucketdigest.runner.listing import list_files
from bucketdigest.search.catalog import indexed_locations
from bucketdigest.search.indexer import index_bucket
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.stores.counting import CountingStore
from bucketdigest.shared.stores.local import LocalStore
from tests.search.conftest import digest_folder, write_topics


def _rows(entries: list) -> list[tuple[str, str, str, str | None]]:
    return [(e.source, e.path, e.digest, e.state) for e in entries]


def test_ls_reads_the_index_and_only_the_records_it_does_not_hold(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    settings = StoreSettings(bucket=str(tmp_path / "bucket"))
    write_topics(tmp_path / "in")
    digest_folder(store, tmp_path / "in")
    index_bucket(store, settings)
    late = tmp_path / "late"
    late.mkdir()
    (late / "errata.md").write_text("# Errata\n\nPage 12: the pit is ten feet deep.\n")
    exts = EXTENSION_GROUPS["all"]
    Ingestor(store).ingest([FolderSource(late, FileFilter(exts=exts))])

    from_registry = catalog(store)
    assert len(from_registry) == 6
    assert _rows(list_files(settings)) == _rows(from_registry)
    assert [e.state for e in from_registry if e.path == "errata.md"] == [DocState.TODO]

    counted = CountingStore(store)
    with_index = catalog(counted, None, indexed_locations(settings))
    assert _rows(with_index) == _rows(from_registry)
    assert counted.requests["GET"] == 1  # the one record the index does not hold yet

    source = str(late)
    assert _rows(list_files(settings, source)) == _rows(catalog(store, source))
    only_index = [e for e in list_files(settings, str(tmp_path / "in")) if e.state is DocState.DONE]
    assert len(only_index) == 5
