"""Links in the converter's Markdown, made to name members of the result zip."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from bucketdigest.shared.result import IMAGES_DIR

_LINK_TARGET = re.compile(r"(\]\()\s*([^)\s]+)\s*(\))")


def relative_images(markdown: str, image_dir: Path) -> str:
    """pymupdf4llm links an image by the path it wrote it to: absolute, or relative to the
    working directory when the folder is under it. Every link to a file of ``image_dir``
    becomes ``images/NAME``, so a result never depends on where the worker ran. Printed text
    that reads as a link to nothing (LaTeX's ``\\setkomainfont[<name>](<Regular>)``) stays
    text: its bracket is escaped. Links with a scheme and anchors are kept as they are."""
    written = {path.name for path in image_dir.iterdir()} if image_dir.is_dir() else set()

    def relative(match: re.Match[str]) -> str:
        target = match[2]
        name = target.rsplit("/", 1)[-1]
        if name in written:
            return f"{match[1]}{IMAGES_DIR}/{name}{match[3]}"
        if target.startswith("#") or urlsplit(target.strip("<>")).scheme:
            return match[0]
        return f"\\{match[0]}"

    return _LINK_TARGET.sub(relative, markdown)
