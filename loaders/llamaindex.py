"""LlamaIndex: a reader and a retriever over a bucket.

from bucketdigest.loaders.llamaindex import BucketdigestReader, BucketdigestRetriever
documents = BucketdigestReader("./bucketdigest-data").load_data()   # every chunk
retriever = BucketdigestRetriever("./bucketdigest-data", similarity_top_k=4)
for found in retriever.retrieve("how does boarding work?"):
    print(found.score, found.node.metadata["source"], found.node.metadata["page"])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document, NodeWithScore, QueryBundle, TextNode

from bucketdigest.loaders.common import bucket_of, chunk_metadata, done_chunks
from bucketdigest.runner.bucket import Bucket

_NOT_EMBEDDED = ["names", "blocks", "regions", "chunk_id", "hash"]
"""Metadata LlamaIndex should keep out of what it embeds or shows a model (ids and boxes)."""


class BucketdigestReader(BaseReader):
    """Every chunk of every done document of a bucket as a ``Document``: its text, and as
    metadata its hash, names, source path, page, heading path, blocks and regions."""

    def __init__(self, bucket: str | Path | Bucket, *, path: str | None = None) -> None:
        self.bucket = bucket_of(bucket)
        self.path = path

    def load_data(self, *args: Any, **kwargs: Any) -> list[Document]:
        names: dict[str, list[str]] = {}
        for entry in self.bucket.files():
            names.setdefault(entry.digest, []).append(entry.path)
        return [
            Document(
                text=chunk["text"],
                id_=chunk["id"],
                metadata=chunk_metadata(entry, chunk, names.get(entry.digest, [entry.path])),
                excluded_embed_metadata_keys=_NOT_EMBEDDED,
                excluded_llm_metadata_keys=_NOT_EMBEDDED,
            )
            for entry, chunk in done_chunks(self.bucket, self.path)
        ]


class BucketdigestRetriever(BaseRetriever):
    """The bucket's own search (hybrid by default) as a LlamaIndex retriever: nodes with the
    passage's whole text, and its hash, names, page, headings and regions as metadata."""

    def __init__(
        self,
        bucket: str | Path | Bucket,
        *,
        similarity_top_k: int = 4,
        mode: str = "hybrid",
        path: str | None = None,
        file_type: str | None = None,
        tag: str | None = None,
    ) -> None:
        super().__init__()
        self.bucket = bucket_of(bucket)
        self.similarity_top_k = similarity_top_k
        self.mode = mode
        self.filters = {
            k: v for k, v in {"path": path, "file_type": file_type, "tag": tag}.items() if v
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.bucket.passages(
            query_bundle.query_str, mode=self.mode, limit=self.similarity_top_k, **self.filters
        )
        return [
            NodeWithScore(
                node=TextNode(
                    text=p.text,
                    id_=p.hit.chunk_id or p.hit.digest,
                    metadata=p.metadata,
                    excluded_embed_metadata_keys=_NOT_EMBEDDED,
                    excluded_llm_metadata_keys=_NOT_EMBEDDED,
                ),
                score=p.hit.score,
            )
            for p in found
        ]
