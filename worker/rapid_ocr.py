"""page-ocr's second reader: PaddleOCR's PP-OCRv4 models, which the ``rapidocr_onnxruntime``
wheel ships (detection, Chinese and English recognition, orientation), on onnxruntime.

Measured against Tesseract on the scanned pages of the real-world corpus (docs/benchmarks.md,
"OCR readers"), Tesseract reads printed Latin text better (every fact of those pages, word
recall 0.96 against 0.74: PP-OCR's English glues words, "ontheTAPTEMPObutton"), faster and in
less memory. It is the reader where Tesseract fails: where Tesseract's page is doubtful (mostly
noise), PP-OCR reads it, and its lines of :data:`SCORE_FLOOR` or more become the page's text:
Chinese scans (Tesseract here reads English only), large or stylised lettering, labels on
photos. Its lines below the floor (a picture's texture read as "uu") are left out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from bucketdigest.shared.errors import DigestError

SCORE_FLOOR = 0.9
"""A line's recognition score (0-1) below which it is noise."""
MAX_SIDE = 2000
"""The page's long side in pixels at most (PP-OCR would scale a larger image down to it)."""
MAX_PIXELS = 1_200_000
"""The page's area in pixels at most (a letter page at 115 dpi): the detector's memory grows
with it, by up to 0.29 GB a megapixel on the corpus's scans (0.58 GB at 2 megapixels), and a
worker's whole process tree is to stay under 1 GiB."""
PACKAGE = "rapidocr_onnxruntime"
PARAGRAPH_GAP = 0.7
"""A gap between two lines taller than this share of a line's height starts a paragraph."""


@dataclass(frozen=True)
class Line:
    text: str
    score: float
    box: tuple[float, float, float, float]
    """(x0, y0, x1, y1) in the image's pixels."""


@dataclass(frozen=True)
class RapidPage:
    """The lines PP-OCR read on one page, in its order (top to bottom)."""

    lines: tuple[Line, ...]

    @property
    def trusted(self) -> str:
        """The text of the lines scored :data:`SCORE_FLOOR` or more, in paragraphs."""
        paragraphs: list[list[str]] = []
        previous: Line | None = None
        for line in self.lines:
            if line.score < SCORE_FLOOR:
                continue
            height = line.box[3] - line.box[1]
            if previous is None or line.box[1] - previous.box[3] > PARAGRAPH_GAP * height:
                paragraphs.append([])
            paragraphs[-1].append(line.text)
            previous = line
        return "\n\n".join(" ".join(lines) for lines in paragraphs)

    @property
    def confidence(self) -> float:
        """Mean line score, weighted by length, 0-100 as Tesseract's (0 with no lines)."""
        size = sum(len(line.text) for line in self.lines)
        score = sum(line.score * len(line.text) for line in self.lines)
        return round(100 * score / size, 1) if size else 0.0

    @property
    def tsv(self) -> str:
        """Every line read, with its score and box: the record kept beside the text."""
        rows = ["score\tx0\ty0\tx1\ty1\ttext"]
        for line in self.lines:
            box = "\t".join(f"{value:.0f}" for value in line.box)
            rows.append(f"{line.score:.3f}\t{box}\t{line.text}")
        return "\n".join(rows) + "\n"


def version() -> str | None:
    """``RapidOCR 1.4.4 (PP-OCRv4)``, or None when the package is not installed."""
    try:
        return f"RapidOCR {metadata.version(PACKAGE)} (PP-OCRv4)"
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _engine() -> Any:
    """The models, loaded once per process; one thread each, as workers run side by side."""
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError as exc:  # not installed, or OpenCV lacks a system library
        raise DigestError(f"RapidOCR cannot load: {exc}") from exc
    return RapidOCR(
        intra_op_num_threads=1,
        inter_op_num_threads=1,
        max_side_len=MAX_SIDE,
        det_limit_type="max",
        det_limit_side_len=MAX_SIDE,
    )


def zoom(width: float, height: float) -> float:
    """The scale a page of ``width`` by ``height`` points is rendered at for PP-OCR: its long
    side at most :data:`MAX_SIDE` pixels, its area at most :data:`MAX_PIXELS`. (PP-OCR's own
    default would enlarge a page's short side to 736 pixels: a strip of 144 by 18 points
    became 5,888 by 736 pixels and 1.1 GB.)"""
    return min(MAX_SIDE / max(width, height, 1), (MAX_PIXELS / max(width * height, 1)) ** 0.5)


def read_image(image: bytes) -> RapidPage:
    """Read one page image (PNG bytes, rendered at :func:`zoom`)."""
    found, _ = _engine()(image)
    lines = []
    for corners, text, score in found or ():
        xs, ys = [float(x) for x, _ in corners], [float(y) for _, y in corners]
        lines.append(Line(str(text).strip(), float(score), (min(xs), min(ys), max(xs), max(ys))))
    return RapidPage(tuple(line for line in lines if line.text))
