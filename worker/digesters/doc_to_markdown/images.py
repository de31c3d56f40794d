"""Image links in the converter's Markdown, made relative to the result zip."""

from __future__ import annotations

import re
from pathlib import Path

from bucketdigest.shared.result import IMAGES_DIR

_LINK_TARGET = re.compile(r"(\]\()([^)\s]+)(\))")


def relative_images(markdown: str, image_dir: Path) -> str:
    """pymupdf4llm links an image by the path it wrote it to: absolute, or relative to the
    working directory when the folder is under it. Every link to a file of ``image_dir``
    becomes ``images/NAME``, so a result never depends on where the worker ran."""
    written = {path.name for path in image_dir.iterdir()} if image_dir.is_dir() else set()

    def relative(match: re.Match[str]) -> str:
        name = match[2].rsplit("/", 1)[-1]
        if name not in written:
            return match[0]
        return f"{match[1]}{IMAGES_DIR}/{name}{match[3]}"

    return _LINK_TARGET.sub(relative, markdown)
