"""How many CPU threads the models of a digester child run on.

onnxruntime gives a session a thread per core unless told otherwise, and its threads spin
while they wait for the next operator. pymupdf's layout and table models are small: on 108
pages of manuals one converter took 15.8 s with onnxruntime's threads but 30.1 s of CPU, and
20.4 s (20.4 s of CPU) on one thread. With a worker per core every core has pages of its own
to convert, so the extra threads only take CPU the other workers need: a worker's digester
child gives the sessions that leave their thread count to onnxruntime an equal share of the
machine's cores (:func:`share_of_cores`). Sessions that choose their own (the OCR reader's
one thread) keep it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from bucketdigest.worker.capacity import machine_cores

LOADED_ON_IMPORT = ("pymupdf.layout",)
"""Modules that load a model when they are imported: ``import pymupdf`` imports
``pymupdf.layout``, which makes the layout model's onnxruntime sessions. A fork server holds
them back (:func:`hold_back_models`): the sessions' threads would not survive the fork, and a
child sets its models' thread count (:func:`limit_sessions`) before they load."""


def share_of_cores(workers: int) -> int:
    """Threads each of ``workers`` workers on this machine gets: the cores this process may
    run on (within a container's CPU quota), shared out (at least one)."""
    return max(1, machine_cores() // workers)


def limit_sessions(threads: int | None) -> None:
    """onnxruntime sessions made from now on in this process run on ``threads`` threads
    (``intra_op_num_threads``) unless their options name a count (None or 0: onnxruntime's
    choice). Called before the models load: pymupdf makes its layout model's sessions when
    ``pymupdf.layout`` is imported."""
    if not threads:
        return
    import onnxruntime

    class Session(onnxruntime.InferenceSession):  # type: ignore[misc]
        def __init__(self, path_or_bytes: Any, sess_options: Any = None, *args: Any, **kw: Any):
            options = sess_options or onnxruntime.SessionOptions()
            if not options.intra_op_num_threads:
                options.intra_op_num_threads = threads
            super().__init__(path_or_bytes, options, *args, **kw)

    onnxruntime.InferenceSession = Session


def hold_back_models() -> None:
    """From now on in this process, importing a module of :data:`LOADED_ON_IMPORT` raises
    ImportError, and the libraries that try it go on without (pymupdf without its layout
    model, pymupdf4llm set not to use it)."""
    for module in LOADED_ON_IMPORT:
        sys.modules.setdefault(module, None)  # type: ignore[assignment]


def load_held_back_models() -> None:
    """In a child forked from a process that held the models back (:func:`hold_back_models`):
    load them now, leaving the libraries as their own imports would have. pymupdf's layout
    model is activated and pymupdf4llm told to use it, as it is when importing pymupdf loads
    it; loaded later (at the first conversion) it would be activated after a legacy-mode
    conversion had switched it off, and that conversion ran the model on every page."""
    held = [m for m in LOADED_ON_IMPORT if m in sys.modules and sys.modules[m] is None]
    for module in held:
        del sys.modules[module]
        importlib.import_module(module)
    if held and (pymupdf4llm := sys.modules.get("pymupdf4llm")) is not None:
        pymupdf4llm.use_layout(True)
