"""Text a born-digital page shows but its text layer lacks: words set as a picture (a poster's
title banner, a logo, a slide's screenshot of text) or as outlined glyphs (vector paths).

Only pages without any text layer go to page-ocr; these words would be missing from pages that
have one. Regions that may hold such words are found cheaply: pictures, and clusters of filled paths
shaped like glyphs, with no word of the text layer inside. A region is rendered small first
and read only when it looks like print (set on a flat ground, not a photograph); then
Tesseract reads it, and the lines it is sure of go into the page's Markdown where the region
stands among the page's blocks, behind a comment with their confidence.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pymupdf

from bucketdigest.shared.errors import DigestError
from bucketdigest.worker.document_blocks import Word, ocr_words
from bucketdigest.worker.tesseract import LINE_FLOOR, read_pixmap, tessdata

MIN_WIDTH = 30.0
MIN_HEIGHT = 8.0
"""A region smaller than this (points) holds no word worth reading."""
MAX_REGIONS = 4
"""Regions read on one page at the most (the largest)."""
MAX_PATHS = 400
"""A page with more vector paths (a map, a vectorised scan) is not searched for glyphs."""
GLYPH_SIZE = 60.0
"""A path larger than this (points) is a shape, not a letter."""
MIN_GLYPHS = 5
DPI = 150
"""Lettering drawn as a picture is mostly large: 150 dpi reads it, at a quarter of 300 dpi's
time (Tesseract's time grows with the pixels)."""
MAX_PIXELS = 2_000_000
FLAT_GROUND = 0.4
"""A region of print has this share of its pixels in one grey (its ground) at least."""
PROBE_DPI = 100
TEXTURED_LETTERED_ROWS = 0.35
MIN_BANDS = 3
"""A picture without a flat ground reads as lettering when more than this share of its rows
cross many edges, in this many bands of rows (lines of letters) at least."""
INK_CONTRAST = 64
"""Grey levels (of 256) from the ground that make a pixel ink."""
LETTERED_ROWS = 0.22
"""A region of print has more than this share of pixel rows crossing many strokes."""
LETTER_EDGES = 16
"""Edges of ink a row through a line of letters crosses at least (eight strokes: a few
letters; an emblem's ring crosses four)."""
MIN_STRIP_ROWS = 6
MAX_STRIP_ROWS = 36
"""Pixel rows a strip of letters spans to be read again (at :data:`DPI`: a line of 3 to 17
points), four times as wide as high at least: a line of small print, not a drawing's
rows (on the corpus, taller or squarer strips read again gave nothing to keep)."""
STRIP_FLOOR = 85.0
"""A strip read again is kept when Tesseract is this sure of it (the lines of an emblem's
ring read as a strip come out as confident junk more often than a page's do)."""
STRIP_DPI = 300
"""A strip left out is small print: read again at the resolution Tesseract wants for it."""
MAX_STRIPS = 4
"""A region with more strips left out than this is a screenshot or a sheet of small print,
not lettering with a line beside it: its page reading is what it gives (of the 76 regions
read on the benches' corpus, 63 leave 0 to 2 strips, the 11 over this are screenshots of
programs and UML sheets, each costing 0.6-1.5 s more for its strips)."""
GREY = pymupdf.csGRAY
"""Regions are read in grey: Tesseract's library (5.5) read no word off two of the corpus's
69 regions that look like print in colour, which it read in grey (a conference's banner in
two blues over a cut line of the page's own text, a university's logo), and none the other
way round; in grey the 69 read in 7.3 s instead of 8.1 (docs/benchmarks.md)."""
_WORDS = re.compile(r"[^\W\d_]{2,}")
_BLANK = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class DrawnText:
    """Words read off a region of the page."""

    box: pymupdf.Rect
    text: str
    confidence: float

    def markdown(self) -> str:
        return f"<!--drawn text, OCR confidence {self.confidence:.0f}--> {self.text}"


def _glyph_regions(page: pymupdf.Page) -> list[pymupdf.Rect]:
    """Clusters of filled paths shaped like glyphs, side by side: words drawn as outlines
    (a small path a letter; a path of many curves the size of a word, a word or a logo's
    lettering drawn as one)."""
    paths = page.get_cdrawings()
    if not paths or len(paths) > MAX_PATHS:
        return []
    glyphs: list[tuple[pymupdf.Rect, int]] = []
    for path in paths:
        box = pymupdf.Rect(path["rect"])
        items = path.get("items", ())
        if "f" not in path.get("type", "") or {item[0] for item in items} <= {"re"}:
            continue
        if 1 < max(box.width, box.height) <= GLYPH_SIZE:
            glyphs.append((box, 1))
        elif (
            len(items) >= 4 * MIN_GLYPHS
            and box.width <= 0.4 * page.rect.width
            and box.height <= 0.15 * page.rect.height
        ):
            glyphs.append((box, MIN_GLYPHS))
    clusters: list[tuple[pymupdf.Rect, int]] = []
    for box, weight in sorted(glyphs, key=lambda glyph: (glyph[0].y0, glyph[0].x0)):
        clusters.append((pymupdf.Rect(box), weight))
        merged = True
        while merged:  # a new glyph can join clusters that were apart
            merged = False
            last, count = clusters[-1]
            reach = min(last.height, GLYPH_SIZE)
            near = pymupdf.Rect(
                last.x0 - reach, last.y0 - reach / 4, last.x1 + reach, last.y1 + reach / 4
            )
            for n, (other, weight_other) in enumerate(clusters[:-1]):
                if near.intersects(other):
                    clusters[-1] = (last | other, count + weight_other)
                    del clusters[n]
                    merged = True
                    break
    return [box for box, count in clusters if count >= MIN_GLYPHS]


def regions(page: pymupdf.Page) -> list[pymupdf.Rect]:
    """The page's regions that may show words its text layer lacks, largest first."""
    area = page.rect.get_area()
    found = [pymupdf.Rect(info["bbox"]) & page.rect for info in page.get_image_info()]
    found = [box for box in found if box.get_area() < 0.5 * area]  # a scan: :mod:`scanned`
    found += _glyph_regions(page)
    found = [box for box in found if box.width >= MIN_WIDTH and box.height >= MIN_HEIGHT]
    if not found:
        return []
    words = [pymupdf.Rect(word[:4]) for word in page.get_text("words")]
    empty = [
        box
        for box in found
        if not any(box.contains(pymupdf.Point((w.x0 + w.x1) / 2, (w.y0 + w.y1) / 2)) for w in words)
    ]
    distinct: list[pymupdf.Rect] = []
    for box in sorted(empty, key=lambda b: -b.get_area()):
        if not any(other.contains(box) for other in distinct):
            distinct.append(box)
    return distinct[:MAX_REGIONS]


def _looks_like_print(page: pymupdf.Page, box: pymupdf.Rect) -> tuple[bool, str]:
    """Whether ``box`` looks like lines of print, and a digest of what it shows. Print stands
    on a flat ground (a photograph's greys spread over the whole range), and a good share of
    its pixel rows cross many strokes, as rows through a line of letters do (a diagram's rows
    cross a few lines: on the corpus's slides, no row of their pictures did, while every
    region that Tesseract read words off had a fifth of its rows or more)."""
    pixmap = page.get_pixmap(clip=box, dpi=PROBE_DPI, colorspace=pymupdf.csGRAY)
    digest = hashlib.sha256(b"%d %d " % (pixmap.width, pixmap.height) + pixmap.samples)
    if not pixmap.width or not pixmap.height:
        return False, digest.hexdigest()
    grey = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.width)
    levels = np.bincount((grey // 16).ravel(), minlength=16)
    if levels.max() < FLAT_GROUND * grey.size:
        return _lettered_bands(grey), digest.hexdigest()
    ink = np.abs(grey.astype(np.int16) - (int(levels.argmax()) * 16 + 8)) > INK_CONTRAST
    strokes = np.abs(np.diff(ink.astype(np.int8), axis=1)).sum(axis=1)
    lettered = float((strokes >= max(4, pixmap.width / 25)).mean())
    return lettered > LETTERED_ROWS, digest.hexdigest()


def _lettered_bands(grey: np.ndarray) -> bool:
    """Whether a picture without a flat ground (a poster's banner over a photograph, a flag, a
    texture) shows lines of lettering: rows crossing many sharp edges in bands as high as a
    line of letters, with quieter rows between them. A photograph's edges mostly make no such
    bands (of the pictures without a flat ground on the first four pages of the corpus
    archives' 1,665 PDFs, six pass this: Tesseract read a conference banner's lines off one,
    nothing off the others, 0.7 s each; three pass in the benches' 1,208 corpus pages)."""
    edges = np.abs(np.diff(grey.astype(np.int16), axis=1)) > INK_CONTRAST
    lettered = edges.sum(axis=1) >= max(4, grey.shape[1] / 25)
    if float(lettered.mean()) <= TEXTURED_LETTERED_ROWS:
        return False
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate(([0], lettered.astype(np.int8), [0])))))
    bands = runs[::2]  # the lengths of the runs of lettered rows
    return int(((bands >= 4) & (bands <= 60)).sum()) >= MIN_BANDS


def _ink(grey: np.ndarray) -> np.ndarray:
    """Which pixels of ``grey`` are ink: far from its commonest grey (the ground)."""
    levels = np.bincount((grey // 16).ravel(), minlength=16)
    return np.abs(grey.astype(np.int16) - (int(levels.argmax()) * 16 + 8)) > INK_CONTRAST


def _unread_strips(grey: np.ndarray, words: list[Word]) -> list[pymupdf.IRect]:
    """Strips of rows (as the box of their ink) where ink outside the boxes of the words read
    crosses rows as letters do (:data:`LETTER_EDGES`): a small line beside large lettering (a logo's
    "by <Company>"), which Tesseract's page layout leaves out."""
    ink = _ink(grey)
    for word in words:
        ink[
            max(0, int(word.y0) - 2) : int(word.y1) + 3, max(0, int(word.x0) - 2) : int(word.x1) + 3
        ] = False
    lettered = np.abs(np.diff(ink.astype(np.int8), axis=1)).sum(axis=1) >= LETTER_EDGES
    strips: list[tuple[int, int]] = []
    for row in np.flatnonzero(lettered):
        if strips and row - strips[-1][1] <= 2:
            strips[-1] = (strips[-1][0], int(row) + 1)
        else:
            strips.append((int(row), int(row) + 1))
    boxes = []
    for top, bottom in strips:
        columns = np.flatnonzero(ink[top:bottom].any(axis=0))
        strip = pymupdf.IRect(int(columns[0]), top, int(columns[-1]) + 1, bottom)
        if MIN_STRIP_ROWS <= strip.height <= MAX_STRIP_ROWS and strip.width >= 4 * strip.height:
            boxes.append(strip)  # the shape of a line of small print
    return boxes


def _read(page: pymupdf.Page, box: pymupdf.Rect, language: str) -> DrawnText | None:
    """The words Tesseract is sure of in ``box``: read as a page, then each strip of letters
    that reading left out read again as a block, in its place from the top. Both in grey
    (:data:`GREY`), lines without a word of two characters left out (an icon's strokes read
    as letters)."""
    binary = shutil.which("tesseract") or "tesseract"
    zoom = min(DPI / 72, (MAX_PIXELS / max(box.get_area(), 1.0)) ** 0.5)
    pixmap = page.get_pixmap(clip=box, matrix=pymupdf.Matrix(zoom, zoom), colorspace=GREY)
    read = read_pixmap(pixmap, language, tessdata(), binary, "region")
    words = ocr_words(read.tsv, pixmap.width)
    parts = [(min((w.y0 for w in words), default=0.0), read.worded().trusted, read.confidence)]
    rows = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.width)
    strips = _unread_strips(rows, words)
    for found in strips if len(strips) <= MAX_STRIPS else ():
        margin = found.height
        strip = pymupdf.Rect(
            found.x0 - margin, found.y0 - margin, found.x1 + margin, found.y1 + margin
        )
        image = page.get_pixmap(
            clip=(strip / zoom + (box.x0, box.y0, box.x0, box.y0)) & box,
            matrix=pymupdf.Matrix(STRIP_DPI / 72, STRIP_DPI / 72),
            colorspace=GREY,
        )
        again = read_pixmap(image, language, tessdata(), binary, "block").worded()
        parts.append((float(found.y0), again.trusted, again.confidence))
    kept = [
        (text, confidence)
        for n, (_, text, confidence) in sorted(enumerate(parts), key=lambda part: part[1][0])
        if _WORDS.search(text) and confidence >= (LINE_FLOOR if n == 0 else STRIP_FLOOR)
    ]
    if not kept:
        return None
    text = _BLANK.sub("\n\n", " ".join(text for text, _ in kept)).strip()
    return DrawnText(box, " ".join(text.split()), min(confidence for _, confidence in kept))


_READ: OrderedDict[tuple[str, str], tuple[str, float] | None] = OrderedDict()
"""What regions showing the same pixels read as (a logo on every slide is read once)."""
READ_KEPT = 256


def drawn_text(page: pymupdf.Page, language: str) -> list[DrawnText]:
    """The words read off the page's regions that show print but hold no text layer (none
    where Tesseract is not installed or fails on a region)."""
    if shutil.which("tesseract") is None:
        return []
    found = []
    for box in regions(page):
        printed, digest = _looks_like_print(page, box)
        if not printed:
            continue
        key = (digest, language)
        if key not in _READ:
            try:
                read = _read(page, box, language)
            except DigestError:
                read = None
            _READ[key] = (read.text, read.confidence) if read is not None else None
            while len(_READ) > READ_KEPT:
                _READ.popitem(last=False)
        if (known := _READ[key]) is not None:
            found.append(DrawnText(box, *known))
    return found


def _normalised(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def with_drawn_text(page: pymupdf.Page, markdown: str, found: list[DrawnText]) -> str:
    """``markdown`` with each region's words before the first paragraph that stands below the
    region on the page (at the end when none does)."""
    if not found:
        return markdown
    blocks = sorted(
        (block for block in page.get_text("blocks") if block[6] == 0 and block[4].strip()),
        key=lambda block: (block[1], block[0]),
    )
    paragraphs = markdown.rstrip("\n").split("\n\n")
    keys = [_normalised(paragraph) for paragraph in paragraphs]
    inserts: dict[int, list[str]] = {}
    for read in sorted(found, key=lambda r: (r.box.y0, r.box.x0)):
        at = len(paragraphs)
        for block in blocks:
            if block[1] < read.box.y0:
                continue
            start = _normalised(block[4])[:24]
            hit = next((n for n, key in enumerate(keys) if start and start in key), None)
            if hit is not None:
                at = hit
                break
        inserts.setdefault(at, []).append(read.markdown())
    out = []
    for n, paragraph in enumerate(paragraphs):
        out += inserts.get(n, [])
        out.append(paragraph)
    out += inserts.get(len(paragraphs), [])
    return "\n\n".join(out) + "\n"
