"""A long document's Markdown, made and kept in page ranges.

Each range, once converted, is committed to a folder the job saves in its checkpoints: the
range's images first, then ``range.json`` (the pages' Markdown and the problems met), written
atomically. A later attempt, here or on another worker after a timeout, a crash or a lost
lease, takes the committed ranges as they are, so any of those costs at most one range of work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

RANGE_FILE = "range.json"
IMAGES = "images"


def page_ranges(count: int, size: int) -> list[list[int]]:
    """0-based page numbers in consecutive ranges of ``size``."""
    return [list(range(first, min(first + size, count))) for first in range(0, count, size)]


def range_folder(partial: Path, numbers: list[int]) -> Path:
    """``partial/00051-00100`` for pages 51 to 100."""
    return partial / f"{numbers[0] + 1:05d}-{numbers[-1] + 1:05d}"


def load_range(folder: Path, count: int) -> tuple[list[str], list[str]] | None:
    """The committed pages and problems of a range, or None if it was not finished."""
    try:
        saved = json.loads((folder / RANGE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    pages, problems = saved.get("pages"), saved.get("problems", [])
    if not isinstance(pages, list) or len(pages) != count:
        return None
    return [str(p) for p in pages], [str(p) for p in problems]


def commit_range(folder: Path, pages: list[str], problems: list[str]) -> None:
    """Mark a range finished; its images must already be in ``folder/images``."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / f".{RANGE_FILE}.tmp"
    data = {"pages": pages, "problems": problems}
    scratch.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(scratch, folder / RANGE_FILE)


def range_images(folder: Path) -> list[Path]:
    images = folder / IMAGES
    return sorted(images.iterdir()) if images.is_dir() else []
