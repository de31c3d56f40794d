"""A real Git LFS remote on disk (``file://``, no server), with awkward file names."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bucketdigest.shared.samples import make_pdf

LFS_NAMES = [
    "docs/Core Rules.pdf",
    "docs/errata, v2.pdf",
    "docs/[draft] scenarios.pdf",
    "docs/Règles du jeu.pdf",
    "docs/日本語ルール.pdf",
    "docs/sub/a b, [c].pdf",
    "docs/sub/plain.pdf",
    "docs/sub/more/one.pdf",
    "docs/sub/more/two.pdf",
    "docs/sub/more/three.pdf",
]


@dataclass
class LfsRemote:
    """A bare repository with LFS objects, and a work clone to change it."""

    bare: Path
    work: Path
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=self.work, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip

    def add_pdf(self, name: str, seed: int) -> Path:
        path = make_pdf(self.work / name, title=Path(name).stem, pages=1, seed=seed)
        self.files[name] = path
        return path

    def commit_and_push(self, message: str, *, verify: bool = True) -> None:
        """Commit everything and push; ``verify=False`` skips git-lfs's pre-push hook, which
        would refuse a pointer whose object does not exist (the point of some tests)."""
        self.git("add", "-A")
        self.git("commit", "-qm", message)
        self.git("push", "-q", *([] if verify else ["--no-verify"]), "origin", "main")

    def digest(self, name: str) -> str:
        return hashlib.sha256(self.files[name].read_bytes()).hexdigest()

    def hide_lfs_objects(self) -> None:
        """Make every LFS object unreachable (as root, chmod would not stop us)."""
        shutil.move(self.bare / "lfs", self.bare / "lfs-hidden")


@pytest.fixture
def lfs_remote(tmp_path: Path) -> LfsRemote:
    if shutil.which("git-lfs") is None:
        pytest.fail("git-lfs is not installed: scripts/setup.sh installs it")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    work = tmp_path / "work"
    subprocess.run(
        ["git", "clone", "-q", bare.as_uri(), str(work)], check=True, capture_output=True
    )
    remote = LfsRemote(bare=bare, work=work)
    remote.git("lfs", "install", "--local")
    remote.git("lfs", "track", "docs/**")
    for seed, name in enumerate(LFS_NAMES):
        remote.add_pdf(name, seed)
    remote.add_pdf("plain/not-in-lfs.pdf", 100)
    (work / "plain" / "notes.txt").write_text("not a document\n")
    remote.commit_and_push("rulebooks")
    return remote
