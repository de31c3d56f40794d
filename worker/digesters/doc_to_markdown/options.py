"""What the converter is asked for and what it returns. The conversion itself, which loads
PyMuPDF, lives in ``converter.py`` beside this module and runs only in the digester process.

Two engines ship with PyMuPDF 2.x: "layout" (an ONNX layout model: reflowed paragraphs,
robust tables, OCR-capable) and "legacy" (about 2.3x faster, hard line breaks). We default to
layout because the text is what every later step (search chunks, summaries) consumes; see
docs/benchmarks.md for the measurements behind this choice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bucketdigest.shared.bucket_settings import CONVERTER_MODES, LAYOUT_FEATURES
from bucketdigest.worker.digesters.doc_to_markdown.running import Running

CONVERTER = "pymupdf4llm"
IMAGE_FORMATS = ("png", "jpg")


@dataclass(frozen=True)
class ConverterOptions:
    """The options we pass to pymupdf4llm, validated here because it ignores unknown ones."""

    mode: str = "layout"
    write_images: bool = True
    image_format: str = "png"
    dpi: int = 150
    keep_headers: bool = False
    """Leave running headers, footers and page numbers in the text (else they go to
    ``pages.json``, see :mod:`running`)."""
    plain_pages: bool = True
    """In layout mode, convert plain pages (one column of text: :mod:`plain_pages`) from
    their text layer alone, the layout model only the others: the same facts of the fidelity
    bench and faster (docs/benchmarks.md)."""
    layout_features: str = "auto"
    """What the layout model sees of a page (:mod:`layout_model`): its text layer and an
    image of it, its text layer alone, or (auto) the image only where it has pictures or
    vector graphics."""
    drawn_text: bool = True
    """In layout mode, read with Tesseract the words a page shows as pictures or outlined
    glyphs where its text layer has none (:mod:`drawn_text`)."""
    ocr_language: str = "eng"
    """Tesseract's language(s) for :attr:`drawn_text` (the worker's ``--ocr-language``)."""
    range_pages: int = 50
    """Pages converted together, and saved together in checkpoints. The converter ranks the
    header font sizes of the pages it is given, so this is also the header levels' context."""

    def __post_init__(self) -> None:
        if self.mode not in CONVERTER_MODES:
            raise ValueError(f"converter mode must be one of {CONVERTER_MODES}, not {self.mode!r}")
        if self.image_format not in IMAGE_FORMATS:
            raise ValueError(
                f"image format must be one of {IMAGE_FORMATS}, not {self.image_format!r}"
            )
        if not 36 <= self.dpi <= 600:
            raise ValueError(f"image dpi must be between 36 and 600, not {self.dpi}")
        if self.layout_features not in LAYOUT_FEATURES:
            raise ValueError(
                f"layout features must be one of {LAYOUT_FEATURES}, not {self.layout_features!r}"
            )
        if not 1 <= self.range_pages <= 1000:
            raise ValueError(f"range_pages must be between 1 and 1000, not {self.range_pages}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def engine_options(self) -> dict[str, Any]:
        """What pymupdf4llm is given besides the pages and images. Layout mode OCRs text-less
        pages itself when an engine is installed; our page-ocr digester does that instead, so
        it is recorded and retried as its own output. Its tables come as HTML, their cells
        rebuilt from the ruling lines with rows and columns spanned (22 of 23 table facts of
        the fidelity bench against 17 of its Markdown tables); ``tables.py`` turns those
        without spanned cells into Markdown."""
        return {"use_ocr": False, "table_output": "html"} if self.mode == "layout" else {}


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
    fingerprints: tuple[str, ...] | None = None
    """Per page (PDFs only), see :mod:`fingerprint`."""
    kept_pages: int = 0
    """Pages taken from the predecessor's result (unchanged in this revision)."""
    headers: tuple[list[tuple[int, int]], ...] = ()
    """Per page, its headers: (line number, font size); see :mod:`headers`."""
    running: tuple[Running, ...] = ()
    """Per page, the running header and footer lines taken out of its text."""
    engines: tuple[str, ...] = ()
    """Per page, what converted it: ``layout`` (the model) or ``text`` (its text layer, a
    plain page); a page kept from the revision before, what converted it then."""


@dataclass(frozen=True)
class KeptPage:
    """A page's Markdown (image links relative to the images folder) and images, taken from
    the result of the revision before."""

    markdown: str
    images: dict[str, bytes]
    engine: str
    """What converted it (:mod:`engines`)."""


PageKeeper = Callable[[list[str]], dict[int, KeptPage]]
"""Given the document's page fingerprints, the pages (0-based) that need no conversion."""


TEXT_RULES = 16
"""Bumped when what we do around the converter changes its Markdown (2: right-to-left lines,
:mod:`rtl`; 3: running heads out, :mod:`running`, and markup tidied, :mod:`tidy`; 4: tables
rebuilt from their ruling lines, :mod:`tables`; 5: Chinese and Japanese lines joined without a
space; 6: plain pages from their text layer, :mod:`plain_pages`; 7: Korean word spaces,
:mod:`hangul`; 8: pages strewn with vector paths not segmented, :mod:`segmenting`; 9: plain
pages by default, Chinese, Japanese and Korean ones too, and pages without pictures or
drawings read by the layout model that sees their text alone, :mod:`layout_model`; 10:
scanned pages read from their text layer, :mod:`scanned`, vertical pages, :mod:`vertical`,
drop caps, :mod:`drop_caps`, running lines told from the page, :mod:`margins`, and words drawn
as pictures read, :mod:`drawn_text`; 11: columns read whole, :mod:`reading_order`, and text
set in aligned columns as tables, :mod:`aligned_columns`; 12: bold runs merged within a line
only, :mod:`tidy`; 13: tables of one column or one row read as text, :mod:`tables`; 14:
inline code read as text wherever it reads the same, :mod:`tidy`; 15: glyphs without a
character left out, and pages made of them read by OCR, :mod:`unmapped`; 16: code blocks with
the spaces and indents they print, :mod:`code_blocks`), so a new revision does not
keep pages its predecessor made the old way."""


def converter_version() -> str:
    """pymupdf4llm's version and our :data:`TEXT_RULES`: ``2.0+text.4``."""
    import pymupdf4llm

    return f"{pymupdf4llm.__version__}+text.{TEXT_RULES}"
