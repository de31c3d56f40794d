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
CONVERTING = "converting.json"
"""In a range's folder while the converter works on some of its pages (0-based numbers), gone
once the range is committed: found there, it says the process died converting those pages (a
crash, or a time limit), so the range is converted again page by page."""


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


def _write_json(path: Path, data: object) -> None:
    """Write atomically (a reader sees the old file or the new one, never a part)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(scratch, path)


def _page_file(folder: Path, number: int) -> Path:
    return folder / f"page-{number + 1:05d}.json"


def commit_range(folder: Path, pages: list[str], problems: list[str]) -> None:
    """Mark a range finished; its images must already be in ``folder/images``."""
    _write_json(folder / RANGE_FILE, {"pages": pages, "problems": problems})
    for leftover in [folder / CONVERTING, *folder.glob("page-*.json")]:
        leftover.unlink(missing_ok=True)


def mark_converting(folder: Path, numbers: list[int]) -> None:
    _write_json(folder / CONVERTING, numbers)


def converting(folder: Path) -> list[int] | None:
    """The pages the process that died was converting, or None if none died here."""
    try:
        numbers = json.loads((folder / CONVERTING).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return [int(n) for n in numbers] if isinstance(numbers, list) else None


def died_converting(partial: Path) -> bool:
    """Whether a converter process died in the middle of some range under ``partial``."""
    return partial.is_dir() and any(partial.rglob(CONVERTING))


def commit_page(folder: Path, number: int, markdown: str, problems: list[str]) -> None:
    """Keep one page converted alone (while its range is converted page by page)."""
    _write_json(_page_file(folder, number), {"markdown": markdown, "problems": problems})


def load_page(folder: Path, number: int) -> tuple[str, list[str]] | None:
    try:
        saved = json.loads(_page_file(folder, number).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(saved["markdown"]), [str(p) for p in saved.get("problems", [])]


def range_images(folder: Path) -> list[Path]:
    images = folder / IMAGES
    return sorted(images.iterdir()) if images.is_dir() else []
