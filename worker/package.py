"""The result zip: Markdown per page and whole, images, info.json. Deterministic bytes.

Members are written in sorted order with a fixed timestamp and permissions, so the same
conversion and the same ``info`` always give the same bytes (``info`` records who converted the
document and when, so two runs differ only there).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from bucketdigest.worker.convert import Conversion

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_COMPRESSED = (".png", ".jpg", ".jpeg")
"""Stored as they are: deflating them again costs CPU and saves nothing."""

DOCUMENT = "document.md"
INFO = "info.json"


def page_member(number: int) -> str:
    """``pages/0001.md`` for page 1."""
    return f"pages/{number:04d}.md"


def _member(name: str, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    compressed = name.lower().endswith(_COMPRESSED)
    info.compress_type = zipfile.ZIP_STORED if compressed else zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info, data


def build_members(conversion: Conversion, info: dict[str, Any]) -> dict[str, bytes]:
    """Every member of the zip, by name."""
    pages = [page.strip() + "\n" for page in conversion.pages]
    members = {DOCUMENT: "\n".join(pages).encode()}
    for number, page in enumerate(pages, start=1):
        members[page_member(number)] = page.replace("](images/", "](../images/").encode()
    if conversion.image_dir.is_dir():
        for image in conversion.image_dir.iterdir():
            members[f"images/{image.name}"] = image.read_bytes()
    members[INFO] = (json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    return members


def write_zip(members: dict[str, bytes], dest: Path) -> Path:
    """Write ``members`` to ``dest`` in a reproducible way and return ``dest``."""
    with zipfile.ZipFile(dest, "w") as archive:
        for name in sorted(members):
            archive.writestr(*_member(name, members[name]))
    return dest
