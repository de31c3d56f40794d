"""What a digester is, what it is given, and what it returns.

A digester declares its outputs and the outputs it reads (``needs``); ``applies_to`` looks at
the file type alone; ``run`` returns every declared output or raises. It never reports a
failure as a value: the coordinator turns what it raises into a ``failed`` record.

Digesters run inside the sandbox child process (see :mod:`bucketdigest.worker.sandbox`), so
their heavy imports (PyMuPDF, Tesseract bindings, torch) belong inside ``run``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bucketdigest.shared.filetypes import FileKind, FileType

if TYPE_CHECKING:
    from bucketdigest.worker.digest_settings import DigestSettings


@dataclass(frozen=True)
class Produced:
    """One output as a digester returns it: the zip members it consists of (may be none) and a
    small JSON-able summary recorded in ``digests.json``."""

    files: dict[str, bytes] = field(default_factory=dict)
    content: Any = None


@dataclass(frozen=True)
class DigestContext:
    """Everything a digester may read. ``tree`` holds the files of the outputs completed so far,
    under their zip member names; ``scratch`` is an empty folder of its own."""

    digest: str
    source: Path
    file: FileType
    tree: Path
    scratch: Path
    settings: DigestSettings
    partial: Path | None = None
    """Where a digester may keep finished parts of its work (``partial/<digester>``): saved
    in the job's checkpoints and given back to a later attempt, so it can resume."""
    predecessor: Path | None = None
    """The result zip of the document this revision supersedes (see ``worker.predecessor``)."""

    def partial_for(self, name: str) -> Path | None:
        return self.partial / name if self.partial is not None else None

    def read_text(self, member: str) -> str:
        return (self.tree / member).read_text(encoding="utf-8")

    def members(self, folder: str) -> list[str]:
        """The member names under ``folder/`` in the tree, sorted."""
        base = self.tree / folder
        if not base.is_dir():
            return []
        return sorted(f"{folder}/{p.name}" for p in base.iterdir() if p.is_file())


class Digester(ABC):
    """One step of the digest chain."""

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[str]
    outputs: ClassVar[tuple[str, ...]]
    needs: ClassVar[tuple[str, ...]] = ()
    """Outputs of earlier digesters this one reads; each must be completed before it runs."""
    kinds: ClassVar[frozenset[FileKind]]
    """The file kinds it applies to."""
    preload: ClassVar[tuple[str, ...]] = ()
    """Modules the digester child imports as it starts (heavy libraries, loaded once)."""

    def size(self, source: Path, file: FileType) -> int:
        """How big the document is for every digester's time limit, in pages (the digester of
        the primary output is asked; run in the digester child)."""
        return 1

    def applies_to(self, file: FileType) -> bool:
        return file.kind in self.kinds

    @abstractmethod
    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        """Every declared output, or raise."""
