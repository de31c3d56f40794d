"""The ONNX embedder gives sentence-transformers' vectors for all-MiniLM-L6-v2."""

from __future__ import annotations

import os

import numpy as np

from bucketdigest.shared.embedding import DIMENSION, Embedder, packaged_model, shared_embedder

TEXTS = [
    "Grappling rules for the barbarian.",
    "Naval combat in the age of sail is brutal.",
    "",
    "dragon " * 400,  # longer than 256 tokens: truncated the same way
    *(f"Sentence {i} about dice, cards and a map of the dungeon." for i in range(40)),
]


def test_vectors_match_sentence_transformers_for_the_same_model() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(packaged_model()), device="cpu").encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True
    )
    ours = shared_embedder().encode(TEXTS)
    assert ours.shape == (len(TEXTS), DIMENSION) and ours.dtype == np.float32
    assert float((ours * reference).sum(axis=1).min()) >= 0.999


def test_batches_keep_the_order_of_the_texts() -> None:
    embedder = shared_embedder()
    together = embedder.encode(TEXTS, batch_tokens=40)
    one_by_one = np.stack([embedder.encode([text])[0] for text in TEXTS])
    assert np.allclose(together, one_by_one, atol=1e-5)
    assert embedder.encode([]).shape == (0, DIMENSION)


def test_the_int8_weights_give_nearly_the_float_vectors() -> None:
    """The 8-bit model is quantised from the shipped weights on first use and kept."""
    quantized = Embedder(precision="int8")
    assert quantized.precision == "int8"
    cosine = (quantized.encode(TEXTS) * shared_embedder().encode(TEXTS)).sum(axis=1)
    assert float(cosine.mean()) >= 0.98 and float(cosine.min()) >= 0.9
