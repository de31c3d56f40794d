"""LangChain: a document loader and a retriever over a bucket.

from bucketdigest.loaders.langchain import BucketdigestLoader, BucketdigestRetriever
docs = BucketdigestLoader("./bucketdigest-data").load()       # every chunk, with metadata
retriever = BucketdigestRetriever(bucket="./bucketdigest-data", k=4)
for doc in retriever.invoke("how does boarding work?"):
    print(doc.metadata["source"], doc.metadata["page"], doc.page_content[:80])
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from bucketdigest.loaders.common import bucket_of, chunk_metadata, done_chunks
from bucketdigest.runner.bucket import Bucket


class BucketdigestLoader(BaseLoader):
    """Every chunk of every done document of a bucket as a ``Document``: its text, and as
    metadata its hash, names, source path, page, heading path, blocks and regions on the page
    (``path``: only documents at ingested paths matching this glob)."""

    def __init__(self, bucket: str | Path | Bucket, *, path: str | None = None) -> None:
        self.bucket = bucket_of(bucket)
        self.path = path

    def lazy_load(self) -> Iterator[Document]:
        names: dict[str, list[str]] = {}
        for entry in self.bucket.files():
            names.setdefault(entry.digest, []).append(entry.path)
        for entry, chunk in done_chunks(self.bucket, self.path):
            metadata = chunk_metadata(entry, chunk, names.get(entry.digest, [entry.path]))
            yield Document(page_content=chunk["text"], metadata=metadata, id=chunk.get("id"))


class BucketdigestRetriever(BaseRetriever):
    """The bucket's own search (hybrid by default) as a LangChain retriever: each passage
    whole, with its hash, names, page, headings, regions and score as metadata; filters
    ``path`` (a glob on ingested paths), ``file_type`` and ``tag``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bucket: Any = Field(description="A Bucket, or its location (a folder or s3://bucket/prefix).")
    k: int = 4
    mode: str = "hybrid"
    path: str | None = None
    file_type: str | None = None
    tag: str | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        bucket = bucket_of(self.bucket)
        filters = {"path": self.path, "file_type": self.file_type, "tag": self.tag}
        found = bucket.passages(
            query, mode=self.mode, limit=self.k, **{k: v for k, v in filters.items() if v}
        )
        return [
            Document(page_content=p.text, metadata=p.metadata, id=p.hit.chunk_id) for p in found
        ]
