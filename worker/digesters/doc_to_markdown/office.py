"""Office documents to Markdown by markitdown: Word (.docx) with its headings, lists and
tables, PowerPoint (.pptx) one page per slide, Excel (.xlsx) a table per sheet."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bucketdigest.shared.errors import PermanentDigestError

_SLIDE = re.compile(r"^<!-- Slide number: \d+ -->\s*$", re.MULTILINE)


def office_to_markdown(path: Path, ext: str) -> tuple[list[str], dict[str, Any]]:
    """Markdown pages (a slide each for presentations, else one) and metadata (title);
    PermanentDigestError naming the reason when the file cannot be read."""
    from markitdown import MarkItDown

    if path.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    try:
        result = MarkItDown(enable_plugins=False).convert_local(str(path), file_extension=f".{ext}")
    except Exception as exc:  # markitdown wraps each format's own errors
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise PermanentDigestError(f"not a readable .{ext} file: {reason}") from exc
    text = (result.text_content or "").strip()
    if not text:
        raise PermanentDigestError(f"no text in this .{ext} file")
    pages = [text]
    if ext == "pptx":
        pages = [slide.strip() for slide in _SLIDE.split(text) if slide.strip()] or [text]
    metadata = {"title": result.title} if result.title else {}
    return [page + "\n" for page in pages], metadata
