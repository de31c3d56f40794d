"""Git LFS pointer files, parsed strictly per the spec (git-lfs/docs/spec.md).

A pointer is UTF-8 text under 1024 bytes: ``version https://git-lfs.github.com/spec/v1`` first,
then ``key value`` lines sorted by key, each ending in a newline, with at least
``oid sha256:<64 lowercase hex>`` and ``size <integer>``. The oid is the SHA-256 of the content,
which is our document id, so a pointer tells whether a document is done without downloading it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_POINTER_SIZE = 1024
VERSION_LINE = "version https://git-lfs.github.com/spec/v1"
_KEY = re.compile(r"[a-z0-9.-]+")
_OID = re.compile(r"sha256:([0-9a-f]{64})")
_SIZE = re.compile(r"0|[1-9][0-9]*")


class MalformedPointer(ValueError):
    """A blob that claims to be an LFS pointer but breaks the spec."""


@dataclass(frozen=True)
class LfsPointer:
    oid: str
    size: int


def looks_like_pointer(blob: bytes) -> bool:
    """Whether ``blob`` presents itself as a pointer (and so must parse as one or be reported)."""
    return len(blob) < MAX_POINTER_SIZE and (
        blob.startswith(b"version https://git-lfs") or b"\noid sha256:" in blob
    )


def parse_pointer(blob: bytes) -> LfsPointer:
    """Parse a pointer; MalformedPointer says what is wrong."""
    if len(blob) >= MAX_POINTER_SIZE:
        raise MalformedPointer(f"{len(blob)} bytes; a pointer is under {MAX_POINTER_SIZE}")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedPointer("not UTF-8 text") from exc
    if not text.endswith("\n"):
        raise MalformedPointer("the last line does not end with a newline")
    lines = text[:-1].split("\n")
    if lines[0] != VERSION_LINE:
        raise MalformedPointer(f"first line is {lines[0]!r}, expected {VERSION_LINE!r}")
    values: dict[str, str] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(" ")
        if not sep or not _KEY.fullmatch(key):
            raise MalformedPointer(f"bad line {line!r}")
        if key in values or (values and key < list(values)[-1]):
            raise MalformedPointer(f"keys not sorted or repeated at {key!r}")
        values[key] = value
    oid = _OID.fullmatch(values.get("oid", ""))
    if oid is None:
        raise MalformedPointer(f"oid {values.get('oid')!r} is not sha256:<64 lowercase hex>")
    if not _SIZE.fullmatch(values.get("size", "")):
        raise MalformedPointer(f"size {values.get('size')!r} is not a whole number")
    return LfsPointer(oid=oid.group(1), size=int(values["size"]))
