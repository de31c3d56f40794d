"""The LangChain and LlamaIndex loaders, against the real ``langchain-core`` and
``llama-index-core`` packages, on a bucket a real worker filled (no network: the embedding
model ships; neither framework's downloading code path is taken)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bucketdigest import Bucket
from tests.serve.conftest import Served

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


@pytest.fixture
def bucket(served: Served) -> Bucket:
    return Bucket(served.settings.bucket)


def test_the_langchain_loader_and_retriever_give_passages_with_pages_and_regions(
    bucket: Bucket, served: Served
) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from bucketdigest.loaders.langchain import BucketdigestLoader, BucketdigestRetriever

    docs = BucketdigestLoader(bucket).load()
    long_pdf = served.digests["rulebooks/long.pdf"]
    pdf_docs = [d for d in docs if d.metadata["hash"] == long_pdf]
    assert pdf_docs and all(isinstance(d, Document) for d in docs)
    assert {d.metadata["page"] for d in pdf_docs} == set(range(1, 26))
    assert all(d.metadata["regions"] for d in pdf_docs), "a PDF's chunks say where they are"
    assert pdf_docs[0].metadata["names"] == ["rulebooks/long.pdf"]

    retriever = BucketdigestRetriever(bucket=served.settings.bucket, k=3)
    assert isinstance(retriever, BaseRetriever)
    found = retriever.invoke("boarding the enemy ship")
    assert found[0].metadata["source"] == "naval/broadsides.md"
    assert "Boarding actions begin" in found[0].page_content, "the whole passage, not a snippet"
    on_pdf = retriever.invoke("The Long Rulebook")
    pdf_hit = next(d.metadata for d in on_pdf if d.metadata["source"] == "rulebooks/long.pdf")
    assert pdf_hit["title"] == "long.pdf"
    assert pdf_hit["answer_blocks"] and set(pdf_hit["answer_blocks"]) <= set(pdf_hit["blocks"])
    assert pdf_hit["regions"] and all(r in pdf_hit["chunk_regions"] for r in pdf_hit["regions"])
    assert len(pdf_hit["regions"]) < len(pdf_hit["chunk_regions"]), "the part that answers"
    only_pdfs = BucketdigestRetriever(bucket=bucket, k=5, file_type="pdf").invoke("attack")
    assert only_pdfs and all(d.metadata["file_type"] == "pdf" for d in only_pdfs)


def test_the_llamaindex_reader_and_retriever_give_nodes_with_pages_and_regions(
    bucket: Bucket, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where LlamaIndex would download NLTK data or tiktoken encodings: must stay empty
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "nltk"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    from llama_index.core.schema import Document, NodeWithScore

    from bucketdigest.loaders.llamaindex import BucketdigestReader, BucketdigestRetriever

    documents = BucketdigestReader(bucket, path="rulebooks/*").load_data()
    assert documents and all(isinstance(d, Document) for d in documents)
    assert {d.metadata["source"] for d in documents} == {"rulebooks/long.pdf"}
    assert all(d.metadata["regions"] for d in documents)
    assert "regions" not in documents[0].get_content(metadata_mode="embed"), "boxes not embedded"

    retriever = BucketdigestRetriever(bucket, similarity_top_k=3)
    found = retriever.retrieve("boarding the enemy ship")
    assert all(isinstance(n, NodeWithScore) for n in found)
    assert found[0].node.metadata["source"] == "naval/broadsides.md"
    assert "Boarding actions begin" in found[0].node.get_content()
    assert not any((tmp_path / d).exists() for d in ("nltk", "tiktoken")), "nothing fetched"
    assert os.environ["NLTK_DATA"] == str(tmp_path / "nltk")


@pytest.mark.parametrize("framework", ["langchain", "llamaindex"])
def test_the_guides_example_runs_as_written(
    framework: str, served: Served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    section = GUIDE.read_text().split(f"<!-- example: {framework} -->", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    monkeypatch.chdir(Path(served.settings.bucket).parent)
    exec(code.group(1).replace("./bucketdigest-data", served.settings.bucket), {})
    assert "page" in capsys.readouterr().out
