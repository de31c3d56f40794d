"""Archive members as files: the one place a member name from a zip (a checkpoint, a result,
a predecessor's result) or from a record naming such members becomes a path on this machine.

Everything in the bucket is untrusted: a worker token can put a checkpoint whose members are
named ``/etc/cron.d/x`` or ``../../.ssh/authorized_keys`` and hand the job to an honest worker.
So a member name is only ever joined to a folder through :func:`member_path`, which refuses
absolute names, drive letters, backslashes, ``..`` and ``.`` parts, empty parts, control
characters, and anything that would resolve outside the folder (through a symlink already
there); :func:`extract` also refuses members stored as symlinks or devices.
"""

from __future__ import annotations

import stat
import unicodedata
import zipfile
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path, PurePosixPath

from bucketdigest.shared.errors import UnsafeArchive

MAX_MEMBER_NAME = 1024
"""Bytes a member name may take (S3's key limit; no result of ours comes near)."""


def check_member_name(name: str) -> PurePosixPath:
    """``name`` as a relative POSIX path inside any folder; UnsafeArchive saying why not."""
    why = _unsafe(name)
    if why is not None:
        raise UnsafeArchive(f"archive member {name[:200]!r} refused: {why}")
    return PurePosixPath(name)


def _unsafe(name: str) -> str | None:
    if not name:
        return "an empty name"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_MEMBER_NAME:
        return f"a name longer than {MAX_MEMBER_NAME} bytes"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        return "a control character in the name"
    if "\\" in name:
        return "a backslash (a Windows path)"
    if name.startswith("/"):
        return "an absolute path"
    if len(name) >= 2 and name[1] == ":" and name[0].isalpha():
        return "a drive letter"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "an empty, '.' or '..' part"
    return None


def member_path(root: Path, name: str) -> Path:
    """Where member ``name`` lives under ``root``: never outside it, even through a symlink
    that is already there; UnsafeArchive otherwise."""
    path = root.joinpath(*check_member_name(name).parts)
    resolved_root = root.resolve()
    if not path.resolve().is_relative_to(resolved_root):
        raise UnsafeArchive(f"archive member {name[:200]!r} refused: it resolves outside {root}")
    return path


def _is_special(info: zipfile.ZipInfo) -> bool:
    """A member stored as a symlink, device or pipe (Unix mode in the high bits)."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    return kind not in (0, stat.S_IFREG, stat.S_IFDIR)  # 0: permission bits alone, a file


def extract(
    archive: Path | zipfile.ZipFile,
    dest: Path,
    names: Iterable[str] | None = None,
    *,
    skip: Iterable[str] = (),
) -> list[str]:
    """Write the members of ``archive`` (those in ``names``, or all) except ``skip`` into
    ``dest``, replacing what is there; the names written. Every member is checked before any
    is written, so a hostile archive writes nothing at all."""
    opened = (
        nullcontext(archive) if isinstance(archive, zipfile.ZipFile) else zipfile.ZipFile(archive)
    )
    with opened as zipped:
        wanted = None if names is None else set(names)
        skipped = set(skip)
        chosen: list[tuple[zipfile.ZipInfo, Path, bool]] = []
        for info in zipped.infolist():
            if info.filename in skipped or (wanted is not None and info.filename not in wanted):
                continue
            if _is_special(info):
                raise UnsafeArchive(f"archive member {info.filename[:200]!r} refused: not a file")
            folder = info.filename.endswith("/")
            name = info.filename.removesuffix("/") if folder else info.filename
            chosen.append((info, member_path(dest, name), folder))
        for info, path, folder in chosen:
            try:
                if folder:
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                member_path(dest, info.filename)  # a folder made above may not be a way out
                path.write_bytes(zipped.read(info))
            except (IsADirectoryError, NotADirectoryError, FileExistsError) as exc:
                raise UnsafeArchive(
                    f"archive member {info.filename[:200]!r} refused: a file and a folder "
                    f"of one name ({exc.strerror})"
                ) from None
        return [info.filename for info, _, _ in chosen]
