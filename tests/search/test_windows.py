"""A chunk is found by the best of its windows: a passage past what the model reads of a long
chunk is found by its meaning; results made before windows keep being found."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bucketdigest.search.hit import Hit
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.result import EMBEDDINGS_INFO, WINDOW_VECTORS
from bucketdigest.shared.stores.local import LocalStore
from tests.search.conftest import digest_folder

LEDGER = (
    "The treasurer keeps the ledger of the guild, entering every coin paid in dues, every "
    "fine and every loan, and balances the columns on the last day of the month. "
)
LIGHTHOUSE = (
    "At dusk the keeper climbs the tower and lights the great lamp, so that sailors steer "
    "clear of the rocks in the dark."
)
QUESTION = "who lights a lamp to keep ships off the rocks at night"


@pytest.fixture(scope="module")
def long_chunk_bucket(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bucket of one document whose one chunk says, past its first 256 word pieces, what
    the rest of it does not."""
    root = tmp_path_factory.mktemp("windows")
    (root / "in").mkdir()
    (root / "in" / "guild.md").write_text(
        f"# Guild Accounts\n\n{LEDGER * 14}{LIGHTHOUSE}\n", encoding="utf-8"
    )
    digests = digest_folder(LocalStore(root / "bucket"), root / "in")
    return root / "bucket", digests["guild.md"]


def _searched(bucket: Path) -> list[Hit]:
    settings = StoreSettings(bucket=str(bucket))
    index_bucket(LocalStore(bucket), settings, rebuild=True)
    return Searcher.open(settings).search(SearchRequest(QUESTION, mode=Mode.SEMANTIC))


def test_a_passage_past_the_first_window_is_found_by_its_meaning(
    long_chunk_bucket: tuple[Path, str],
) -> None:
    bucket, digest = long_chunk_bucket
    with zipfile.ZipFile(io.BytesIO(LocalStore(bucket).get(keys.out_key(digest)).data)) as result:
        about = json.loads(result.read(EMBEDDINGS_INFO))
        windows = np.load(io.BytesIO(result.read(WINDOW_VECTORS)))
    assert about["count"] == 1 and about["windows"]["count"] == len(windows) >= 2
    found = _searched(bucket)
    assert [hit.digest for hit in found] == [digest]


def test_a_result_made_before_windows_is_indexed_by_its_chunk_vectors(
    long_chunk_bucket: tuple[Path, str], tmp_path: Path
) -> None:
    """A result of the previous search-semantic (no windows.npy) keeps being found by what
    its one vector a chunk holds: the first 256 word pieces, which the question is not about."""
    bucket, digest = long_chunk_bucket
    store = LocalStore(bucket)
    archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))
    members = {name: archive.read(name) for name in archive.namelist() if name != WINDOW_VECTORS}
    about = json.loads(members[EMBEDDINGS_INFO])
    del about["windows"]
    members[EMBEDDINGS_INFO] = json.dumps(about).encode()
    old = tmp_path / "old"
    shutil.copytree(bucket, old)
    old_store = LocalStore(old)
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w") as out:
        for name, data in members.items():
            out.writestr(name, data)
    old_store.put(keys.out_key(digest), rewritten.getvalue())
    assert _searched(old) == [], "the question is about what the first window does not hold"
    settings = StoreSettings(bucket=str(old))
    hits = Searcher.open(settings).search(SearchRequest("treasurer ledger guild dues"))
    assert hits and hits[0].digest == digest
