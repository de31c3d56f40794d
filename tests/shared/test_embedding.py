"""The ONNX embedder gives sentence-transformers' vectors for all-MiniLM-L6-v2, and reads a
long text whole in windows."""

from __future__ import annotations

import hashlib
import io
import itertools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared.embedding import (
    DIMENSION,
    UNFUSED_INT8,
    Embedder,
    Windows,
    shared_embedder,
    window_bounds,
)
from bucketdigest.shared.model_files import (
    EXPORT_REVISION,
    _onnx_path,
    export_onnx,
    lean_attention,
    model_cache,
    model_file,
    packaged_model,
    quantize_int8,
)

TEXTS = [
    "Grappling rules for the barbarian.",
    "Naval combat in the age of sail is brutal.",
    "",
    "dragon " * 400,  # longer than 256 tokens: truncated the same way
    *(f"Sentence {i} about dice, cards and a map of the dungeon." for i in range(40)),
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """sentence-transformers' vectors of :data:`TEXTS`, by the torch model."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(packaged_model()), device="cpu").encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True
    )


def test_vectors_match_sentence_transformers_for_the_same_model(reference: np.ndarray) -> None:
    ours = shared_embedder().encode(TEXTS)
    assert ours.shape == (len(TEXTS), DIMENSION) and ours.dtype == np.float32
    assert float((ours * reference).sum(axis=1).min()) >= 0.999


def test_batches_keep_the_order_of_the_texts() -> None:
    embedder = shared_embedder()
    together = embedder.encode(TEXTS, batch_tokens=40)
    one_by_one = np.stack([embedder.encode([text])[0] for text in TEXTS])
    assert np.allclose(together, one_by_one, atol=1e-5)
    assert embedder.encode([]).shape == (0, DIMENSION)


def test_the_export_reads_attention_without_its_redundant_steps(reference: np.ndarray) -> None:
    """The export the embedder runs has no NaN guard after attention's softmax and makes the
    additive mask once, and its vectors are those of sentence-transformers' torch model,
    padded batches included (a mask shared wrongly would move the padded texts')."""
    import onnx

    model = onnx.load(str(model_file("float32")))
    graph = model.graph
    kinds = [node.op_type for node in graph.node]
    assert "IsNaN" not in kinds
    masks = [n for n in graph.node if n.op_type == "Where" and "attention" in n.name]
    assert len(masks) == 1, "one additive mask for the six layers"
    assert sum(1 for n in graph.node if n.op_type == "Softmax") == 6, "every layer still there"
    again = onnx.ModelProto()
    again.CopyFrom(model)
    lean_attention(again)
    assert len(again.graph.node) == len(graph.node), "nothing more to take out"

    padded = shared_embedder().encode(TEXTS, batch_tokens=2048)
    assert float(np.abs(padded - reference).max()) < 1e-5


def test_an_earlier_releases_export_is_made_lean_without_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that exported the model under a release before the lean graph, and has let
    torch go since (every later load needs only onnxruntime), gets the lean graph from that
    export: the same vectors as an export made now."""
    import sys

    import onnx

    monkeypatch.setenv("BUCKETDIGEST_MODEL_CACHE", str(tmp_path))
    lean = _onnx_path(packaged_model() / "model.safetensors")
    earlier = lean.with_name(lean.name.replace(f"{EXPORT_REVISION}.onnx", ".onnx"))
    export_onnx(packaged_model(), earlier, lean=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # an export now would fail
    embedder = Embedder(precision="float32")
    assert "IsNaN" not in {node.op_type for node in onnx.load(str(lean)).graph.node}
    assert np.array_equal(
        embedder.encode(TEXTS, batch_tokens=2048),
        shared_embedder().encode(TEXTS, batch_tokens=2048),
    )


def test_the_int8_graph_reads_no_mask_and_gives_the_masked_graphs_vectors(
    tmp_path: Path,
) -> None:
    """8-bit runs take one text at a time, so their graph has no attention mask; its vectors
    are bit for bit those of the same weights quantized with the mask in place."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantized = Embedder(precision="int8")
    ours = onnx.load(str(model_file("int8"))).graph
    assert not [n for n in ours.node if n.op_type == "Where"], "no mask is made"
    assert sum(1 for n in ours.node if n.op_type == "Softmax") == 6
    masked = tmp_path / "masked.onnx"
    quantize_dynamic(
        onnx.load(str(model_file("float32"))), masked, weight_type=QuantType.QInt8, per_channel=True
    )
    texts = [LONG, *TEXTS[:4]]
    unmasked = quantized.encode_windows(texts).vectors
    quantized.session = onnxruntime.InferenceSession(
        str(masked), disabled_optimizers=list(UNFUSED_INT8)
    )
    assert np.array_equal(quantized.encode_windows(texts).vectors, unmasked)


def test_the_int8_session_runs_without_the_fused_layer_norm() -> None:
    """The 8-bit session leaves out onnxruntime's fused layer norm (the slower kernel): its
    vectors are not the fused session's bit for bit, yet as close to them as a rounding."""
    import onnxruntime

    quantized = Embedder(precision="int8")
    texts = [LONG, *TEXTS[:4]]
    ours = quantized.encode_windows(texts).vectors
    quantized.session = onnxruntime.InferenceSession(
        str(model_file("int8"))  # onnxruntime's every rewrite
    )
    fused = quantized.encode_windows(texts).vectors
    assert not np.array_equal(ours, fused), "the fused layer norm ran"
    assert float((ours * fused).sum(axis=1).min()) >= 0.99


def test_the_int8_weights_give_nearly_the_float_vectors() -> None:
    """The 8-bit model is quantised from the shipped weights on first use and kept."""
    quantized = Embedder(precision="int8")
    assert quantized.precision == "int8"
    cosine = (quantized.encode(TEXTS) * shared_embedder().encode(TEXTS)).sum(axis=1)
    assert float(cosine.mean()) >= 0.98 and float(cosine.min()) >= 0.9


LONG = (
    "The treasurer keeps the ledger of the guild, entering every coin paid in dues, every "
    "fine and every loan, and balances the columns on the last day of the month. "
    * 12
    + "At dusk the keeper climbs the tower and lights the great lamp, so that sailors steer "
    "clear of the rocks in the dark."
)


def test_a_long_text_is_read_whole_in_windows_a_short_one_in_one() -> None:
    embedder = shared_embedder()
    texts = ["Naval combat in the age of sail is brutal.", LONG, ""]
    windows = embedder.encode_windows(texts)
    short, long, empty = windows.per_text(len(texts))
    assert len(short[0]) == 1 and short[1] == [(0, len(texts[0]))]
    assert np.allclose(short[0][0], embedder.encode(texts[:1])[0], atol=1e-5)
    assert len(empty[0]) == 1
    vectors, spans = long
    assert len(vectors) >= 2 and spans[0][0] == 0 and spans[-1][1] == len(LONG)
    assert all(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), "overlap"
    assert all(LONG[start - 1] == " " for start, _ in spans[1:]), "windows start at a word"
    # what the model read of the long text before windows never reached its last sentence
    question = embedder.encode(["Who lights a lamp to keep ships off the rocks at night?"])[0]
    truncated = float(embedder.encode([LONG])[0] @ question)
    best = float(np.max(vectors @ question))
    assert best > truncated + 0.15, (best, truncated)


@given(st.lists(st.one_of(st.none(), st.integers(0, 40)), max_size=300), st.integers(2, 20))
def test_windows_cover_every_piece_within_their_size(words: list[int | None], size: int) -> None:
    words = sorted(words, key=lambda word: -1 if word is None else word)  # pieces in word order
    overlap = size // 4
    bounds = window_bounds(words, size, overlap)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(words)
    for start, end in bounds:
        assert 0 < end - start <= size or not words
    for (start, end), (later, _) in itertools.pairwise(bounds):
        assert start < later <= end, "each window begins inside the one before, further on"


def test_stored_windows_that_are_not_well_formed_are_not_used() -> None:
    embedder = shared_embedder()
    made = embedder.encode_windows(["one text", LONG])
    buffer = io.BytesIO()
    np.save(buffer, made.vectors)
    data, record = buffer.getvalue(), made.record()
    again = Windows.stored(record, data, 2)
    assert again is not None and np.array_equal(again.owners, made.owners)
    broken = [
        {**record, "spans": record["spans"][:-1]},  # a window too few
        {**record, "spans": [[0, "a", 1], *record["spans"][1:]]},
        {**record, "spans": [[5, 0, 1], *record["spans"][1:]]},  # a chunk that is not there
        {**record, "overlap": 0},  # windows made another way
        "windows",
    ]
    for bad in broken:
        assert Windows.stored(bad, data, 2) is None, bad
    assert Windows.stored(record, b"not numpy", 2) is None
    assert Windows.stored(record, data[: len(data) // 2], 2) is None, "cut short"
    text = io.BytesIO()
    np.save(text, np.array(["a"] * len(made.vectors)))
    assert Windows.stored(record, text.getvalue(), 2) is None, "no numbers"
    huge = {**record, "spans": [[2**70, 0, 1], *record["spans"][1:]]}
    assert Windows.stored(huge, data, 2) is None
    assert Windows.stored(record, data, 3) is None, "a chunk without windows"


def _tiny_model(path: Path) -> None:
    """An ONNX model of one 64 x 64 product: quantized in milliseconds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [numpy_helper.from_array(weights, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_workers_quantizing_the_model_at_once_on_a_new_machine_all_get_it(tmp_path: Path) -> None:
    """Each digester child of a new machine's first run quantizes the exported model; six
    processes doing it ten times at once all succeed (onnxruntime, given the path, wrote a
    file of one name beside the source and deleted it: they read each other's)."""
    import onnxruntime

    source = tmp_path / "model.onnx"
    _tiny_model(source)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(6, mp_context=context) as pool:
        runs = [pool.submit(quantize_int8, source, tmp_path / f"{i % 6}.onnx") for i in range(60)]
        assert all(run.result().is_file() for run in runs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["model.onnx", *(f"{i}.onnx" for i in range(6))]
    ), "nothing left beside the source"
    session = onnxruntime.InferenceSession(str(tmp_path / "0.onnx"))
    (product,) = session.run(None, {"x": np.ones((1, 64), dtype=np.float32)})
    assert product.shape == (1, 64)


def test_the_export_is_named_by_the_weights_content_so_a_reinstall_finds_it(
    tmp_path: Path,
) -> None:
    """A reinstall, a new virtual environment or a clean clone on the same machine writes the
    weights again with a new mtime; the export is named by their SHA-256 (as the package's
    install record lists it), so it is found and not made again. Weights the record does not
    list (a copy) are named by size and mtime."""
    weights = packaged_model() / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    named = f"all-MiniLM-L6-v2-{digest[:16]}{EXPORT_REVISION}.onnx"
    assert _onnx_path(weights) == model_cache() / named

    copy = tmp_path / "model.safetensors"
    copy.write_bytes(b"weights")
    os.utime(copy, (1_000_000, 1_000_000))
    assert _onnx_path(copy).name == f"all-MiniLM-L6-v2-7-{1_000_000:x}{EXPORT_REVISION}.onnx"
