"""What the converter is asked for and what it returns. The conversion itself, which loads
PyMuPDF, lives in ``engine.py`` beside this module and runs only in the digester process.

Two engines ship with PyMuPDF 2.x: "layout" (an ONNX layout model: reflowed paragraphs,
robust tables, OCR-capable) and "legacy" (about 2.3x faster, hard line breaks). We default to
layout because the text is what every later step (search chunks, summaries) consumes; see
docs/benchmarks.md for the measurements behind this choice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CONVERTER = "pymupdf4llm"
MODES = ("layout", "legacy")
IMAGE_FORMATS = ("png", "jpg")


@dataclass(frozen=True)
class ConverterOptions:
    """The options we pass to pymupdf4llm, validated here because it ignores unknown ones."""

    mode: str = "layout"
    write_images: bool = True
    image_format: str = "png"
    dpi: int = 150

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"converter mode must be one of {MODES}, not {self.mode!r}")
        if self.image_format not in IMAGE_FORMATS:
            raise ValueError(
                f"image format must be one of {IMAGE_FORMATS}, not {self.image_format!r}"
            )
        if not 36 <= self.dpi <= 600:
            raise ValueError(f"image dpi must be between 36 and 600, not {self.dpi}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Conversion:
    """What the converter made of one document; images are files under ``image_dir``."""

    pages: tuple[str, ...]
    image_dir: Path
    metadata: dict[str, Any]
    converter: dict[str, Any]
    seconds: float
    messages: str = ""
    problems: tuple[str, ...] = field(default_factory=tuple)
    reused_pages: int = 0
    """Pages taken from ranges an earlier attempt finished."""


def converter_version() -> str:
    import pymupdf4llm

    return str(pymupdf4llm.__version__)
