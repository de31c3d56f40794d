"""Searches keep answering when files of the index are lost (a hand edit, a partial copy, a
bucket rule), until the indexer's next run rebuilds it: the rows of a fragment whose data file
is gone are left out (their documents found as documents), an index that lost its files gives
way to the other ranking, and the answer says what it left out."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from bucketdigest.search import indexer, stand_in
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Level, Mode, SearchRequest
from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore

NAVAL = "frigate broadsides of cannon at sea"
HARVEST = "villagers sow barley and thresh grain"


@pytest.fixture
def damaged(
    topics_bucket: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[StoreSettings, dict[str, str]]:
    """A copy of the topics bucket indexed a document per commit (a fragment each), whose
    harvest document's chunk data file is then deleted."""
    bucket = tmp_path / "copy"
    shutil.copytree(topics_bucket[0], bucket)
    settings = StoreSettings(bucket=str(bucket))
    monkeypatch.setattr(indexer, "BATCH_DOCUMENTS", 1)
    index_bucket(LocalStore(bucket), settings)
    digests = topics_bucket[1]
    chunks = Searcher.open(settings).chunks
    assert len(chunks.get_fragments()) >= 5
    rows = chunks.to_table(columns=["digest"], with_row_address=True).to_pylist()
    fragment = {r["_rowaddr"] >> 32 for r in rows if r["digest"] == digests["world/harvest.md"]}
    assert len(fragment) == 1
    (lost,) = [f for f in chunks.get_fragments() if f.fragment_id in fragment]
    for data in lost.data_files():
        (bucket / "index" / "chunks.lance" / "data" / data.path).unlink()
    return settings, digests


def test_the_lost_passages_are_read_from_their_results_until_the_rebuild(
    damaged: tuple[StoreSettings, dict[str, str]],
) -> None:
    settings, digests = damaged
    searcher = Searcher.open(settings)
    for mode in Mode:
        hits = searcher.search(SearchRequest(NAVAL, mode=mode))
        assert hits and hits[0].digest == digests["naval/broadsides.md"], mode
        harvest = searcher.search(SearchRequest(HARVEST, mode=mode))
        assert harvest and harvest[0].digest == digests["world/harvest.md"], mode
        assert harvest[0].chunk_id is not None and harvest[0].page is not None, mode
        assert "barley" in harvest[0].snippet.text.lower(), mode
    within = searcher.search(SearchRequest("granary", document=digests["world/harvest.md"]))
    assert [hit.digest for hit in within] == [digests["world/harvest.md"]]
    assert "granary" in within[0].snippet.text.lower()
    documents = searcher.search(SearchRequest(NAVAL, level=Level.DOCUMENTS))
    assert documents[0].digest == digests["naval/broadsides.md"]
    assert searcher.damage is not None
    assert "are read from their 1 documents' results" in searcher.damage

    index_bucket(LocalStore(Path(settings.bucket)), settings)  # finds it lost, rebuilds beside
    rebuilt = Searcher.open(settings)
    assert rebuilt.search(SearchRequest(HARVEST))[0].digest == digests["world/harvest.md"]
    assert rebuilt.damage is None


@pytest.mark.parametrize("cap", ["MAX_DOCUMENTS", "MAX_BYTES"])
def test_lost_passages_past_what_is_read_again_leave_their_documents_found_as_documents(
    damaged: tuple[StoreSettings, dict[str, str]], monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    settings, digests = damaged
    monkeypatch.setattr(stand_in, cap, 0)
    searcher = Searcher.open(settings)
    for mode in Mode:
        hits = searcher.search(SearchRequest(NAVAL, mode=mode))
        assert hits and hits[0].digest == digests["naval/broadsides.md"], mode
        harvest = searcher.search(SearchRequest(HARVEST, mode=mode))
        as_document = [h for h in harvest if h.digest == digests["world/harvest.md"]]
        assert as_document, f"{mode}: a document whose passages are lost is found as a document"
        assert as_document[0].chunk_id is None and as_document[0].page is None
    assert searcher.damage is not None and "passages whose index files are lost" in searcher.damage
    assert "(0 documents' read from their results)" in searcher.damage


def test_an_index_that_lost_its_files_gives_way_to_the_other_ranking(
    damaged: tuple[StoreSettings, dict[str, str]],
) -> None:
    settings, digests = damaged
    bucket = Path(settings.bucket)
    searcher = Searcher.open(settings)
    indexes = searcher.chunks.describe_indices()
    keyword_index = [i for i in indexes if "Inverted" in i.type_url]
    assert keyword_index, "the chunks' full-text index"
    for segment in keyword_index[0].segments:
        shutil.rmtree(bucket / "index" / "chunks.lance" / "_indices" / str(segment.uuid))
    for folder in (bucket / "index" / "documents.lance" / "_indices").iterdir():
        shutil.rmtree(folder)

    searcher = Searcher.open(settings)
    for mode in Mode:
        hits = searcher.search(SearchRequest(NAVAL, mode=mode))
        assert hits and hits[0].digest == digests["naval/broadsides.md"], mode
    assert searcher.damage is not None and "keyword (passages) ranking" in searcher.damage

    with background_server(ServeSettings(store=settings, port=0)) as url:
        answer = httpx.get(f"{url}/api/search/chunks", params={"q": NAVAL}, timeout=60)
        documents = httpx.get(f"{url}/api/search/documents", params={"q": NAVAL}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"][0]["digest"] == digests["naval/broadsides.md"]
    assert "until the next indexing rebuilds it" in answer.json()["incomplete"]
    assert documents.status_code == 200, documents.text
    assert documents.json()["hits"][0]["digest"] == digests["naval/broadsides.md"]
