"""A chunk is indexed by the mean of its windows' vectors: a passage past what the model reads
at a time of a long chunk is found by its meaning; results made before windows keep being
found by their first 256 word pieces."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import SearchRequest
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.embedding import shared_embedder
from bucketdigest.shared.result import EMBEDDINGS, EMBEDDINGS_INFO, WINDOW_VECTORS
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
    """A bucket of one document whose one chunk (two windows) says, past its first 256 word
    pieces, what the rest of it does not."""
    root = tmp_path_factory.mktemp("windows")
    (root / "in").mkdir()
    (root / "in" / "guild.md").write_text(
        f"# Guild Accounts\n\n{LEDGER * 7}{LIGHTHOUSE}\n", encoding="utf-8"
    )
    digests = digest_folder(LocalStore(root / "bucket"), root / "in")
    return root / "bucket", digests["guild.md"]


def _indexed(bucket: Path) -> tuple[Searcher, np.ndarray]:
    """The bucket indexed anew; its searcher and the one chunk's vector in the index."""
    settings = StoreSettings(bucket=str(bucket))
    index_bucket(LocalStore(bucket), settings, rebuild=True)
    searcher = Searcher.open(settings)
    (vector,) = searcher.chunks.to_table(columns=["vector"])["vector"].to_numpy(False)
    return searcher, np.asarray(vector, dtype=np.float32)


def _result(bucket: Path, digest: str) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(LocalStore(bucket).get(keys.out_key(digest)).data)) as zipped:
        return {name: zipped.read(name) for name in zipped.namelist()}


def test_a_chunk_is_indexed_by_all_of_its_windows(long_chunk_bucket: tuple[Path, str]) -> None:
    """What the model reads of the chunk at a time (its first window) is about the ledger
    alone; the index's vector of the chunk also holds the passage past it."""
    bucket, digest = long_chunk_bucket
    result = _result(bucket, digest)
    about = json.loads(result[EMBEDDINGS_INFO])
    windows = np.load(io.BytesIO(result[WINDOW_VECTORS]))
    assert about["count"] == 1 and about["windows"]["count"] == len(windows) == 2
    question = shared_embedder().encode([QUESTION])[0]
    _, vector = _indexed(bucket)
    mean = windows.mean(axis=0)
    assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-5)
    assert float(windows[0] @ question) < 0.1 < 0.2 < float(vector @ question)


def test_a_result_made_before_windows_is_indexed_by_its_chunk_vector(
    long_chunk_bucket: tuple[Path, str], tmp_path: Path
) -> None:
    """A result of the previous search-semantic (no windows, ``embeddings.npy`` of the first
    256 word pieces) keeps being found by that vector until it is reprocessed."""
    bucket, digest = long_chunk_bucket
    members = _result(bucket, digest)
    first = np.load(io.BytesIO(members.pop(WINDOW_VECTORS)))[:1]  # the chunk's first window
    buffer = io.BytesIO()
    np.save(buffer, first)
    members[EMBEDDINGS] = buffer.getvalue()
    about = json.loads(members[EMBEDDINGS_INFO])
    del about["windows"], about["precision"]
    members[EMBEDDINGS_INFO] = json.dumps(about).encode()
    old = tmp_path / "old"
    shutil.copytree(bucket, old)
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w") as out:
        for name, data in members.items():
            out.writestr(name, data)
    LocalStore(old).put(keys.out_key(digest), rewritten.getvalue())
    searcher, vector = _indexed(old)
    assert np.allclose(vector, first[0], atol=1e-6)
    hits = searcher.search(SearchRequest("the treasurer keeps the guild's accounts"))
    assert hits and hits[0].digest == digest
