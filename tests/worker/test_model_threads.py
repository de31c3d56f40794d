"""Workers on one machine share its cores: a digester child's models (pymupdf's layout model,
the embedding model) run on the worker's share, not on a thread per core each."""

from __future__ import annotations

import os

import pytest

from bucketdigest.worker.loop import WorkerSettings
from bucketdigest.worker.pool import sharing_cores
from bucketdigest.worker.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.slow


SESSION_THREADS = """
import gc, sys, onnxruntime
from onnx import TensorProto, helper

value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [value], [out])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 3
own = onnxruntime.InferenceSession(model.SerializeToString(), options)
sessions = [o for o in gc.get_objects() if isinstance(o, onnxruntime.InferenceSession)]
sys.session_threads = {
    "layout": [s.get_session_options().intra_op_num_threads for s in sessions if s is not own],
    "own": [own.get_session_options().intra_op_num_threads],
}
"""
"""Run in the child by ``exec``: the thread counts of the sessions pymupdf's layout model
loaded, and of a session made then with options naming 3 threads."""


def _threads_in(limits: SandboxLimits) -> dict[str, list[int]]:
    sandbox = Sandbox(limits, preload=("pymupdf.layout",))
    try:
        sandbox.call(exec, SESSION_THREADS, {})
        return sandbox.call(eval, "__import__('sys').session_threads")
    finally:
        sandbox.close()


def test_the_layout_model_runs_on_the_workers_share_of_the_cores() -> None:
    shared = _threads_in(SandboxLimits(model_threads=1))
    assert len(shared["layout"]) >= 2  # the layout model and its page-image network
    assert set(shared["layout"]) == {1}
    assert shared["own"] == [3]  # a session that names its threads keeps them


def test_without_a_share_onnxruntime_chooses() -> None:
    assert set(_threads_in(SandboxLimits())["layout"]) == {0}  # 0: a thread per core


def test_workers_on_one_machine_share_its_cores() -> None:
    cores = len(os.sched_getaffinity(0))
    settings = WorkerSettings()
    assert sharing_cores(settings, 1).limits.model_threads is None  # onnxruntime's choice
    assert sharing_cores(settings, 2).limits.model_threads == max(1, cores // 2)
    assert sharing_cores(settings, cores).limits.model_threads == 1
    assert sharing_cores(settings, cores * 4).limits.model_threads == 1
    chosen = WorkerSettings(limits=SandboxLimits(model_threads=3))
    assert sharing_cores(chosen, cores * 4).limits.model_threads == 3
    onnxruntimes_choice = WorkerSettings(limits=SandboxLimits(model_threads=0))
    assert sharing_cores(onnxruntimes_choice, cores).limits.model_threads == 0
