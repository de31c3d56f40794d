"""Index rows from one result zip: a row per search chunk, one for the document.

The chunks, their vectors, tags, summary and page count come from the zip; the paths a
document was ingested from come from the registry. Vectors come from ``embeddings.npy`` (a
chunk's: the mean of its windows' vectors, :mod:`.digesters.search_semantic`; a result made
before windows: its first 256 word pieces', until ``reprocess --outdated``); a document whose
embeddings are missing (that output failed) has its chunks embedded here, in windows (float32), so
every row can be found by meaning. A chunk's word vector (:mod:`.shared.word_embedding`) is
made here from its headings and text (half a millisecond a chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bucketdigest.search.terms import fingerprints, index_terms, matched_text
from bucketdigest.shared.embedding import DIMENSION, MODEL_NAME, shared_embedder
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.naming import display_name, own_title
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.result import CHUNKS, EMBEDDINGS, EMBEDDINGS_INFO, SUMMARY, TAGS, ResultZip
from bucketdigest.shared.word_embedding import word_embedder


@dataclass(frozen=True)
class DocumentRows:
    """What one document contributes to the index."""

    digest: str
    chunks: dict[str, list[Any]]
    """Columns of the chunks table (vectors as one float32 array, row per chunk)."""
    vectors: np.ndarray
    word_vectors: np.ndarray
    """The chunks' word vectors, a row per chunk."""
    document: dict[str, Any]


def _vectors(result: ResultZip, chunks: list[dict[str, Any]]) -> np.ndarray:
    """The chunks' stored vectors when they match the chunks and the model, else made now."""
    stored, about = result.read(EMBEDDINGS), result.json(EMBEDDINGS_INFO)
    if stored is not None and about is not None:
        ids = [c["id"] for c in chunks]
        if about.get("model") == MODEL_NAME and about.get("chunk_ids") == ids:
            import io

            vectors = np.load(io.BytesIO(stored), allow_pickle=False)
            if vectors.shape == (len(chunks), DIMENSION):
                return vectors.astype(np.float32, copy=False)
    if not chunks:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    return shared_embedder().encode_windows([c["text"] for c in chunks]).pooled(len(chunks))


def rows_from_result(
    archive: bytes | Path, digest: str, etag: str, origins: list[SourceRecord]
) -> DocumentRows:
    """Read ``archive``, the zip (its bytes or its file) of the result of ``digest``,
    version ``etag``."""
    with ResultZip(archive) as result:
        info = result.info()
        chunks = loads_lines(result.text(CHUNKS))
        tags = [t["keyword"] for t in result.json(TAGS, [])]
        summary = result.text(SUMMARY).strip()
        vectors = _vectors(result, chunks)

    # what every row of the document shares: where it came from, its title, type and tags
    names = sorted({o.path for o in origins}) or list(info.get("names", []))
    sources = sorted({o.source for o in origins})
    locations = "".join(f"{o.source}\t{o.path}\n" for o in origins) or "".join(
        f"\t{name}\n" for name in names
    )
    title = display_name(names, digest)
    own = own_title(info.get("metadata"), names)
    file_type = str(info.get("ext", ""))
    count = len(chunks)
    texts = [c["text"] for c in chunks]
    headings = [list(c.get("headings", [])) for c in chunks]
    shared = {
        "digest": [digest] * count,
        "title": [title] * count,
        "names": [names] * count,
        "sources": [sources] * count,
        "locations": [locations] * count,
        "file_type": [file_type] * count,
        "tags": [tags] * count,
    }

    # a row per chunk
    matched = [matched_text(t, h) for t, h in zip(texts, headings, strict=True)]
    columns = {
        **shared,
        "text": texts,
        "terms": [index_terms(m) for m in matched],
        "fingerprint": fingerprints(texts, headings),
        "id": [c["id"] for c in chunks],
        "page": [int(c["page"]) for c in chunks],
        "part": [int(c["part"]) for c in chunks],
        "headings": headings,
    }

    # and the document's own row: its words, and the mean of its chunks' vectors
    text = "\n".join([title, *([own] if own else []), *names, ", ".join(tags), summary])
    if count:
        mean = vectors.mean(axis=0)
        vector = mean / max(float(np.linalg.norm(mean)), 1e-12)
    else:  # nothing to average: the document's own words stand for it
        vector = shared_embedder().encode([text])[0]
    document = {
        "digest": digest,
        "title": title,
        "names": names,
        "sources": sources,
        "locations": locations,
        "file_type": file_type,
        "tags": tags,
        "text": text,
        "terms": index_terms(text),
        "vector": vector.astype(np.float32),
        "etag": etag,
        "summary": summary,
        "pages": int(info.get("pages", 0)),
        "chunks": count,
        "indexed_at": datetime.now(UTC),
    }
    return DocumentRows(digest, columns, vectors, word_embedder().encode(matched), document)
