"""Digesters run in a child process, so a converter crash, hang or memory blow-up fails one
output of one document instead of the worker.

The child is forked from a fork server (``forkserver``: a clean process, so no inherited locks
or boto3 sessions), caps its address space with RLIMIT_AS, exits with the worker that started
it, runs the calls sent over a pipe (a module-level function and its arguments), and is
replaced after ``jobs_per_child`` documents (converters leak) or after any failure that killed
it. The server imports the digesters' libraries (PyMuPDF, pymupdf4llm, numpy) once, for every
child the worker starts: a spawned child imported them anew, 0.8 s of CPU each time, where a
forked one starts at once and loads only its models (which the server never loads: see
:func:`model_threads.hold_back_models`). Models a digester loads (the layout model, the
embedding model) stay loaded in the child from one document to the next.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from bucketdigest.shared.errors import DigestError, Interrupted, PermanentDigestError
from bucketdigest.shared.lifeline import deaf_to_ctrl_c, exit_with_parent
from bucketdigest.shared.logs import LogSetup
from bucketdigest.worker.model_threads import limit_sessions, load_held_back_models

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.2
_EXIT_SECONDS = 2.0
_OUT_OF_MEMORY = re.compile(
    r"bad_alloc|out of memory|cannot allocate memory|failed to map segment", re.IGNORECASE
)


@dataclass(frozen=True)
class SandboxLimits:
    """How long one digester may take, how much memory the child may map, when to recycle it.

    The time limit scales with the work: a 2,000-page manual gets what 2,000 pages need,
    while a hung one-page file is still stopped after ``timeout`` seconds."""

    timeout: float = 600.0
    """Seconds one digester may take on one document, plus ``per_page`` for each page."""
    per_page: float = 5.0
    max_memory: int | None = None
    jobs_per_child: int = 50
    recycle_above: int | None = 512 << 20
    """A child resident in more than this many bytes after a document is replaced, as
    Celery's ``worker_max_memory_per_child`` does: a child holds about 0.35-0.42 GiB between
    documents, but one with a 9,000-pixel-square scan kept 0.64 GiB into the next document
    (and its OCR), which took the worker past 1 GiB."""
    model_threads: int | None = None
    """Threads each model of the child runs on (:mod:`model_threads`): the layout model, the
    table model, the embedder. None or 0 leaves it to onnxruntime, which takes every core: right
    for one worker alone, wrong for several on one machine, whose threads would then fight over
    the same cores (``--model-threads``; ``bucketdigest work --workers N`` gives each a share)."""


def _never() -> str | None:
    return None


class ChildDied(DigestError):
    """The digester process crashed or was stopped at its time limit."""


def _format_bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if count >= size:
            return f"{count / size:g} {unit}"
    return f"{count} bytes"


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure, from Python or from a native library
    (onnxruntime raises ``RuntimeException`` with ``std::bad_alloc`` in its message)."""
    return isinstance(exc, MemoryError) or bool(_OUT_OF_MEMORY.search(str(exc)))


class Answer(StrEnum):
    """How the child answers a call: the first item of the tuple it sends back."""

    RESULT = "result"
    """The function returned; the value follows."""
    PERMANENT = "permanent"
    """The input is unusable (PermanentDigestError): no attempt can help."""
    FAILED = "failed"
    """A failure the digester saw coming (DigestError): the child is sound and stays."""
    UNEXPECTED = "unexpected"
    """Any other exception: the child may be in any state, so it is replaced."""
    OUT_OF_MEMORY = "out-of-memory"
    """The memory cap was reached: the child is replaced."""


def _failure(
    exc: BaseException, max_memory: int | None, kind: Answer = Answer.UNEXPECTED
) -> tuple[Answer, str, str]:
    """The answer for a call that raised: (``kind``, or OUT_OF_MEMORY when the cap was
    reached, its message, its traceback)."""
    message = str(exc) or type(exc).__name__
    if max_memory and is_out_of_memory(exc):
        kind = Answer.OUT_OF_MEMORY
    return (kind, message, traceback.format_exc())


def _child_main(
    conn: Connection,
    limits: SandboxLimits,
    preload: tuple[str, ...],
    log_setup: LogSetup,
    environment: dict[str, str],
) -> None:
    """Loop in the child: receive (function, args), answer (RESULT, value) or an error
    (:class:`Answer`).
    If a module of ``preload`` cannot even be loaded (a memory cap too small for it), every
    call gets that error as its answer. A closed pipe (the worker is gone, or stopped it) ends it
    silently, and it exits with its parent in any case (:func:`exit_with_parent`), so a killed
    worker never leaves a converter running. Its logs carry its worker's id, hash and attempt
    (``log_setup`` is the worker's), so a line from the child reads as the job's. Its
    environment is its worker's as the child starts (``environment``), not the fork server's
    as the server started."""
    exit_with_parent()
    os.environ.clear()
    os.environ.update(environment)
    log_setup.apply()
    try:
        _serve(conn, limits, preload)
    except (EOFError, OSError):
        return


def _serve(conn: Connection, limits: SandboxLimits, preload: tuple[str, ...]) -> None:
    limit_sessions(limits.model_threads)
    if max_memory := limits.max_memory:
        resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        load_held_back_models()  # the server imported the rest of the libraries
        for module in preload:  # what the server did not import
            importlib.import_module(module)
    except Exception as exc:
        unusable = _failure(exc, max_memory)
    else:
        unusable = None
    while True:
        function, args = conn.recv()
        if unusable is not None:
            conn.send(unusable)
            continue
        before = _resident()
        try:
            conn.send((Answer.RESULT, function(*args)))
        except PermanentDigestError as exc:
            conn.send((Answer.PERMANENT, str(exc), traceback.format_exc()))
        except DigestError as exc:  # a failure the digester saw coming: the child is sound
            kind, message, trace = _failure(exc, max_memory, Answer.FAILED)
            conn.send((kind, message, exc.detail or trace))
        except Exception as exc:
            conn.send(_failure(exc, max_memory))
        _return_freed_memory(collect=_resident() - before > RETURN_FROM)


RETURN_FROM = 32 << 20
"""A call that left the child this much larger is followed by a collection; a collection
takes ~35 ms in a child holding the layout model, and most calls (tags, summary, chunks)
grow it by nothing."""


def _resident(pid: int | str = "self") -> int:
    """A process's resident memory in bytes (0 where /proc is not)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _return_freed_memory(collect: bool) -> None:
    """Give the system back the heap pages a call freed (after a collection when ``collect``):
    glibc keeps them for the process otherwise, and they pile up call by call, under the next
    document's peak (a converter child held 906 MiB after four manuals, 288 MiB trimmed). A
    trim takes under 10 ms."""
    if collect:
        gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc() -> ctypes.CDLL | None:
    """glibc, for ``malloc_trim`` (None elsewhere: macOS, musl)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def _fork_server(preload: tuple[str, ...]) -> multiprocessing.context.ForkServerContext:
    """The context whose children fork from this process's fork server, which imports
    ``preload`` when it starts (with the first child; a later sandbox of this process with
    other modules has its children import them)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([FORK_SERVER, *preload])
    return context


FORK_SERVER = "bucketdigest.worker.fork_server"
"""The module the fork server imports first: it holds back the modules that load a model."""
TUNABLES = "GLIBC_TUNABLES"
HUGE_PAGES = "glibc.malloc.hugetlb=1"
"""glibc's tunable that has malloc ask for transparent huge pages (``madvise``) for what it
maps. pymupdf's layout model runs its networks with onnxruntime's memory arena off, so each
page's run maps its buffers afresh (117 MB for the page-image network) and the system zeroes
them in 4 KiB faults, 30,000 a run: on one thread that network took 142 ms a page instead of
83 with the arena. With huge pages, 1,400 faults a run; doc-to-markdown in a digester child on
every other PDF of the corpus (588 pages), four runs each way alternating: the child's system
time 18.6 -> 11.0 s, the conversions 126 -> 122 s on average, the same peak memory
(docs/benchmarks.md). Without transparent huge pages in ``madvise`` or ``always`` mode, or
outside glibc 2.35+, it changes nothing."""


@contextmanager
def _huge_pages_for_the_fork_server() -> Iterator[None]:
    """While a child starts: :data:`HUGE_PAGES` in the environment, so a fork server started
    now (with this process's first child) takes it, and every child forked from it. glibc reads
    its tunables only as a program starts; the children's own environment is their worker's,
    so the processes they run (Tesseract: no faster with it) do not take it. A user's own
    ``glibc.malloc.hugetlb`` setting is kept."""
    before = os.environ.get(TUNABLES)
    if before is not None and "glibc.malloc.hugetlb" in before:
        yield
        return
    os.environ[TUNABLES] = f"{before}:{HUGE_PAGES}" if before else HUGE_PAGES
    try:
        yield
    finally:
        if before is None:
            del os.environ[TUNABLES]
        else:
            os.environ[TUNABLES] = before


class Sandbox:
    """Owns one child process and runs digesters in it with limits."""

    def __init__(self, limits: SandboxLimits, preload: tuple[str, ...] = ()) -> None:
        self.limits = limits
        self.preload = preload
        """Modules the child imports when it starts (the digesters' ``preload``)."""
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._jobs = 0

    def start(self) -> None:
        """Start the child now (if it is not running), so its start-up (loading ``preload``)
        overlaps what comes before its first call: fetching the job's source."""
        self._start()

    def _start(self) -> tuple[BaseProcess, Connection]:
        if self._process is None or self._conn is None or not self._process.is_alive():
            self._stop(graceful=False)
            context = _fork_server(self.preload)
            parent, child = context.Pipe()
            self._process = context.Process(
                target=_child_main,
                args=(child, self.limits, self.preload, LogSetup.current(), dict(os.environ)),
                name="bucketdigest-digester",
                daemon=True,
            )
            with deaf_to_ctrl_c(), _huge_pages_for_the_fork_server():
                self._process.start()
            child.close()
            self._conn, self._jobs = parent, 0
        return self._process, self._conn

    def _crash_reason(self, process: BaseProcess) -> str:
        process.join(5)
        code = process.exitcode
        if code is not None and code < 0:
            reason = f"crashed: {signal.Signals(-code).name}"
        else:
            reason = f"exited unexpectedly (exit code {code})"
        if self.limits.max_memory:
            reason += f" (memory limit {_format_bytes(self.limits.max_memory)} may have been hit)"
        return reason

    def call(
        self,
        function: Callable[..., Any],
        *args: Any,
        interrupt: Callable[[], str | None] = _never,
        pages: int = 0,
        timeout: float | None = None,
    ) -> Any:
        """``function(*args)`` in the child (both picklable), allowed ``timeout`` seconds (by
        default the limits') plus ``per_page`` for each of ``pages``. Raises DigestError with a
        precise reason, PermanentDigestError for unusable input, or Interrupted (killing the
        child) as soon as ``interrupt`` returns a reason, asked several times a second."""
        process, conn = self._start()
        conn.send((function, args))
        base = self.limits.timeout if timeout is None else timeout
        limit = base + self.limits.per_page * pages
        deadline = time.monotonic() + limit

        # wait for the answer, watching for an interrupt, a dead child and the deadline
        try:
            while not conn.poll(_POLL_SECONDS):
                if reason := interrupt():
                    self._stop(graceful=False)
                    raise Interrupted(reason)
                if not process.is_alive():
                    reason = self._crash_reason(process)
                    self._stop(graceful=False)
                    raise ChildDied(reason)
                if time.monotonic() > deadline:
                    self._stop(graceful=False)
                    raise ChildDied(f"timed out after {limit:g} s")
            answer = conn.recv()
        except (EOFError, OSError) as exc:
            reason = self._crash_reason(process)
            self._stop(graceful=False)
            raise ChildDied(reason) from exc

        # the answer: a value, or an error; after an unexpected one the child is replaced
        kind, *rest = answer
        if kind is Answer.RESULT:
            return rest[0]
        message, trace = rest
        if kind is Answer.PERMANENT:
            raise PermanentDigestError(message, trace)
        if kind is Answer.FAILED:
            raise DigestError(message, trace)
        self._stop(graceful=False)
        if kind is Answer.OUT_OF_MEMORY:
            limit = _format_bytes(self.limits.max_memory) if self.limits.max_memory else "?"
            raise DigestError(f"exceeded memory limit {limit}", trace)
        raise DigestError(message, trace)

    def document_done(self) -> None:
        """Count a finished document; the child is replaced after ``jobs_per_child`` of them."""
        self._jobs += 1
        if self._jobs >= self.limits.jobs_per_child or self._holds_too_much():
            self._stop(graceful=True)

    def _holds_too_much(self) -> bool:
        """Whether the child is resident in more than ``recycle_above`` bytes (Linux)."""
        pid = self._process.pid if self._process is not None else None
        if self.limits.recycle_above is None or pid is None:
            return False
        resident = _resident(pid)
        if resident <= self.limits.recycle_above:
            return False
        log.info("replacing the digester child: %s resident", _format_bytes(resident))
        return True

    def close(self) -> None:
        """Stop the child, letting it leave on its own first (it exits when the pipe closes)."""
        self._stop(graceful=True)

    def _stop(self, graceful: bool) -> None:
        """Stop the child; not ``graceful``: kill it at once (it may be stuck in a digester)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._process is not None:
            if graceful:
                self._process.join(_EXIT_SECONDS)
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
            self._process = None
