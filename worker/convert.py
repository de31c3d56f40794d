"""PDF (and other PyMuPDF formats) to Markdown with pymupdf4llm.

Two engines ship with PyMuPDF 2.x: "layout" (an ONNX layout model: reflowed paragraphs,
robust tables, OCR-capable) and "legacy" (about 2.3x faster, hard line breaks). We default to
layout because the text is what every later step (search chunks, summaries) consumes; see
docs/benchmarks.md for the measurements behind this choice.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from bucketdigest.shared.errors import DigestError, PermanentDigestError

CONVERTER = "pymupdf4llm"
MODES = ("layout", "legacy")
IMAGE_FORMATS = ("png", "jpg")
_PARSER_BANNER = re.compile(r"^=== Document parser messages ===$", re.MULTILINE)


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


def converter_version() -> str:
    import pymupdf4llm

    return str(pymupdf4llm.__version__)


def _open(source: Path, ext: str) -> pymupdf.Document:
    if source.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    try:
        doc = pymupdf.open(source, filetype=ext)
    except (pymupdf.FileDataError, pymupdf.EmptyFileError, RuntimeError, ValueError) as exc:
        raise PermanentDigestError(f"not a readable {ext.upper()} file: {exc}") from exc
    if doc.needs_pass:
        doc.close()
        raise PermanentDigestError("the document is password-protected")
    if doc.page_count == 0:
        doc.close()
        raise PermanentDigestError("the document has no pages")
    return doc


def _relative_images(markdown: str, image_dir: Path, link_prefix: str) -> str:
    """pymupdf4llm links images by the path it wrote them to; make those links zip-relative."""
    return re.sub(re.escape(str(image_dir)) + r"/", link_prefix, markdown)


def convert(source: Path, ext: str, workdir: Path, options: ConverterOptions) -> Conversion:
    """Convert ``source`` into per-page Markdown, writing images into ``workdir/images``."""
    messages = io.StringIO()
    pymupdf.set_messages(stream=messages)
    with contextlib.redirect_stdout(messages):
        import pymupdf4llm

        pymupdf4llm.use_layout(options.mode == "layout")
    image_dir = workdir / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    doc = _open(source, ext)
    try:
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        textless = [
            number for number, page in enumerate(doc, start=1) if not page.get_text().strip()
        ]
        with contextlib.redirect_stdout(messages):
            chunks = pymupdf4llm.to_markdown(
                doc,
                page_chunks=True,
                write_images=options.write_images,
                image_path=str(image_dir),
                image_format=options.image_format,
                dpi=options.dpi,
                filename="page",
                show_progress=False,
            )
        page_count = doc.page_count
    except PermanentDigestError:
        raise
    except Exception as exc:
        raise DigestError(f"{CONVERTER} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        doc.close()
    pages = tuple(_relative_images(chunk["text"], image_dir, "images/") for chunk in chunks)
    problems = []
    if len(pages) != page_count:
        problems.append(f"converter returned {len(pages)} of {page_count} pages")
    if textless:
        listed = ", ".join(map(str, textless[:20])) + (", ..." if len(textless) > 20 else "")
        count = f"{len(textless)} of {page_count} pages"
        problems.append(f"{count} have no text layer (image-only or empty): {listed}")
    metadata["page_count"] = page_count
    return Conversion(
        pages=pages,
        image_dir=image_dir,
        metadata=metadata,
        converter={"name": CONVERTER, "version": converter_version(), "options": options.as_dict()},
        seconds=time.perf_counter() - started,
        messages=_PARSER_BANNER.sub("", messages.getvalue()).strip(),
        problems=tuple(problems),
    )
