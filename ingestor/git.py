"""Git repositories whose documents are Git LFS pointers, ingested without downloading what
is already done.

The repository is kept as a bare clone in a cache directory (``git clone --bare`` with
``GIT_LFS_SKIP_SMUDGE=1``: no LFS content is downloaded) and updated with ``git fetch`` on later
runs. Files are listed with ``git ls-tree`` at the ref; small blobs are read in one
``git cat-file --batch`` and parsed as pointers. Content is fetched one object at a time by
piping the pointer into ``git lfs smudge`` (which works for any path, unlike
``git lfs pull --include``, which silently matches nothing for paths with ``,`` or ``[``),
verified against the pointer's oid and size, and the LFS cache copy is deleted at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.ingestor.lfs import MalformedPointer, looks_like_pointer, parse_pointer
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import Candidate
from bucketdigest.shared.errors import SourceError
from bucketdigest.shared.records import FileError

_URL = re.compile(r"^(https?|ssh|git|file)://|^[\w.-]+@[\w.-]+:")
_ENV = {"GIT_LFS_SKIP_SMUDGE": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def _smudge_env() -> dict[str, str]:
    """The environment for ``git lfs smudge``: like the others, but smudging is the point."""
    env = {**os.environ, **_ENV}
    del env["GIT_LFS_SKIP_SMUDGE"]
    return env


def is_git_url(spec: str) -> bool:
    """A remote repository URL (https, ssh, git, file, or scp-like ``git@host:path``)."""
    return bool(_URL.match(spec))


def is_local_repository(path: Path) -> bool:
    """A local work tree (with ``.git``) or a bare repository."""
    return path.is_dir() and (
        (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())
    )


def _git(git_dir: Path | None, *args: str, stdin: bytes | None = None) -> bytes:
    command = ["git", *(["--git-dir", str(git_dir)] if git_dir else []), *args]
    result = subprocess.run(
        command, input=stdin, capture_output=True, env={**os.environ, **_ENV}, check=False
    )
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip().splitlines()
        raise SourceError(f"git {args[0]} failed: {message[-1] if message else result.returncode}")
    return result.stdout


@dataclass(frozen=True)
class TreeEntry:
    blob: str
    size: int
    path: str


class GitSource:
    """One repository at one ref, mirrored in ``cache_dir``."""

    lists_everything = True

    def __init__(
        self, url: str, file_filter: FileFilter, cache_dir: Path, ref: str = "HEAD"
    ) -> None:
        self.name = url
        self.file_filter = file_filter
        self.ref = ref
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rstrip("/").rsplit("/", 1)[-1])[:40]
        self.git_dir = cache_dir / f"{slug}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.git"
        self._update(cache_dir)
        self.commit = (
            _git(self.git_dir, "rev-parse", "--verify", f"{ref}^{{commit}}").decode().strip()
        )

    def _update(self, cache_dir: Path) -> None:
        if self.git_dir.is_dir():
            _git(
                self.git_dir,
                "fetch", "--quiet", "--prune", "--force", "origin",
                "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*",
            )  # fmt: skip
            return
        cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cache_dir, prefix=".clone-"))
        try:
            _git(None, "clone", "--bare", "--quiet", self.name, str(staging / "repo.git"))
            (staging / "repo.git").rename(self.git_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _tree(self) -> list[TreeEntry]:
        listing = _git(self.git_dir, "ls-tree", "-r", "-z", "--long", self.commit)
        entries = []
        for record in listing.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, blob, size = meta.split()
            if kind == b"blob" and mode != b"120000":
                entries.append(
                    TreeEntry(blob.decode(), int(size), path.decode("utf-8", "surrogateescape"))
                )
        return entries

    def _small_blobs(self, entries: list[TreeEntry]) -> dict[str, bytes]:
        """Contents of the blobs small enough to be pointers, read in one batch."""
        wanted = sorted({e.blob for e in entries if e.size < 1024})
        if not wanted:
            return {}
        output = _git(
            self.git_dir, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in wanted).encode()
        )
        blobs: dict[str, bytes] = {}
        offset = 0
        while offset < len(output):
            header_end = output.index(b"\n", offset)
            blob, _, size = output[offset:header_end].decode().split()
            start = header_end + 1
            blobs[blob] = output[start : start + int(size)]
            offset = start + int(size) + 1
        return blobs

    def candidates(self) -> Iterator[Candidate | FileError]:
        entries = [e for e in self._tree() if self.file_filter.accepts(e.path)]
        small = self._small_blobs(entries)
        for entry in entries:
            content = small.get(entry.blob)
            if content is not None and looks_like_pointer(content):
                try:
                    pointer = parse_pointer(content)
                except MalformedPointer as exc:
                    yield FileError(path=entry.path, reason=f"malformed Git LFS pointer: {exc}")
                    continue
                yield Candidate(
                    source=self.name,
                    relative=entry.path,
                    digest=pointer.oid,
                    size=pointer.size,
                    downloads=True,
                    materialize=lambda e=entry, c=content, p=pointer: self._fetch_lfs(
                        e, c, p.oid, p.size
                    ),
                )
            else:
                yield Candidate(
                    source=self.name,
                    relative=entry.path,
                    materialize=lambda e=entry: self._read_blob(e),
                )

    @contextlib.contextmanager
    def _read_blob(self, entry: TreeEntry) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix="bucketdigest-git-") as folder:
            target = Path(folder) / "content"
            with open(target, "wb") as handle:
                subprocess.run(
                    ["git", "--git-dir", str(self.git_dir), "cat-file", "blob", entry.blob],
                    stdout=handle, stderr=subprocess.PIPE, env={**os.environ, **_ENV}, check=True,
                )  # fmt: skip
            yield target

    @contextlib.contextmanager
    def _fetch_lfs(self, entry: TreeEntry, pointer: bytes, oid: str, size: int) -> Iterator[Path]:
        cached = self.git_dir / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
        with tempfile.TemporaryDirectory(prefix="bucketdigest-lfs-") as folder:
            target = Path(folder) / "content"
            try:
                with open(target, "wb") as handle:
                    result = subprocess.run(
                        ["git", "--git-dir", str(self.git_dir), "lfs", "smudge", "--", entry.path],
                        input=pointer, stdout=handle, stderr=subprocess.PIPE,
                        env=_smudge_env(), check=False,
                    )  # fmt: skip
                if result.returncode != 0:
                    lines = result.stderr.decode(errors="replace").strip().splitlines()
                    detail = next(
                        (line for line in lines if "rror" in line), lines[-1] if lines else ""
                    )
                    raise SourceError(f"cannot fetch the Git LFS object {oid[:12]}: {detail}")
                with open(target, "rb") as handle:
                    actual = hashlib.file_digest(handle, "sha256").hexdigest()
                    actual_size = handle.tell()
                if (actual, actual_size) != (oid, size):
                    raise SourceError(
                        f"content does not match its LFS pointer (sha256 {actual[:12]}, "
                        f"{actual_size} bytes; pointer says {oid[:12]}, {size} bytes)"
                    )
                yield target
            finally:
                cached.unlink(missing_ok=True)
