"""A second reading of meaning for hybrid search: WordLlama's static word vectors.

all-MiniLM-L6-v2 (:mod:`.embedding`) reads a passage as a sentence model; WordLlama
(``l2_supercat``) reads it as the mean of its tokens' vectors, learnt from a large model's
embeddings for retrieval. It is weaker alone (question bench doc@1 0.52 against 0.63) but errs
elsewhere: added to the hybrid score of a question it put the right document first for more
questions than it lost (:data:`.search.fusion.WORD_WEIGHT`). Its vectors were trained to be cut
short (Matryoshka): the first 128 of the 256 dimensions shipped read the questions no worse
(added to every query at 0.3: +8 -1 against +6 -2) in half the index. A passage's vector is a
table lookup and a mean (half a millisecond for a 4,000-character chunk, mostly its tokens), so the
index makes it from the text itself and nothing of a result changes.

The weights and the tokenizer ship inside the ``wordllama`` package and are read from its
files here: its own loader looks for the tokenizer in a folder the wheel does not have and
then asks Hugging Face, and nothing is ever fetched from a hub.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bucketdigest.shared.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

WORD_MODEL_PACKAGE = "wordllama"
WORD_DIMENSION = 128
_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"


def packaged_word_model() -> tuple[Path, Path]:
    """The weights' and the tokenizer's files inside the installed package (found, not
    imported: its ``__init__`` pulls in its training and download code)."""
    spec = importlib.util.find_spec(WORD_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"hybrid search needs the {WORD_MODEL_PACKAGE} package: pip install it")
    folder = Path(next(iter(spec.submodule_search_locations)))
    weights, tokenizer = folder / _WEIGHTS, folder / _TOKENIZER
    for path in (weights, tokenizer):
        if not path.is_file():
            raise ConfigError(f"the {WORD_MODEL_PACKAGE} package lacks {path}: reinstall it")
    return weights, tokenizer


class WordEmbedder:
    """Texts to unit vectors: the mean of their tokens' vectors (no truncation: a long
    passage is read whole, as a static model can at no cost)."""

    def __init__(self) -> None:
        import numpy as np
        from safetensors import safe_open
        from tokenizers import Tokenizer

        weights, tokenizer = packaged_word_model()
        with safe_open(str(weights), framework="np") as tensors:  # the first dimensions
            self.table: np.ndarray = np.ascontiguousarray(
                tensors.get_tensor(_TENSOR)[:, :WORD_DIMENSION], dtype=np.float32
            )
        self._tokenizer: Any = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text (zeros for a text with no token)."""
        import numpy as np

        vectors = np.zeros((len(texts), WORD_DIMENSION), dtype=np.float32)
        if not texts:
            return vectors
        if len(texts) == 1:  # a query: on this thread, not handed to the tokenizer's pool
            encoded = [self._tokenizer.encode(texts[0], add_special_tokens=False)]
        else:  # without offsets: a third faster, what an index of many chunks waits for
            encoded = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(texts))
        read = lengths > 0
        if not read.any():
            return vectors
        ids = np.fromiter(
            itertools.chain.from_iterable(e.ids for e in encoded), np.int64, int(lengths.sum())
        )
        np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
        starts = np.cumsum(lengths) - lengths
        # each text's tokens summed in one pass (the mean's scale goes with the norm)
        vectors[read] = np.add.reduceat(self.table[ids], starts[read], axis=0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


@functools.cache
def word_embedder() -> WordEmbedder:
    """One per process (loading reads 16 MB: ~0.1 s)."""
    return WordEmbedder()
