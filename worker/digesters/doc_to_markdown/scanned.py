"""Scanned pages that carry a text layer, read as the pages of text they are.

Libraries, archives and office scanners make "sandwich" PDFs: each page is one picture (the
scan) with the OCR's words laid over it as invisible text, or hidden under it. The layout
model sees a page-sized picture and hands its text over as text inside a picture, a line at a
time; pymupdf4llm drops invisible text altogether. Such a page is a page of body text. It is
read from its text layer here: lines on one baseline put together, columns found at their
gutter (a caption in small type set beside a column too, and a page whose columns change
within it read band by band), lines joined into paragraphs (a gap, an indented first line or
a short last line ends one; a word broken at a line end joined as :mod:`plain_pages` joins
it), a line set apart at the top or bottom of the page marked as a running head or foot
(:mod:`running`), larger lines as headings. The scan itself is kept as the page's image.

A text layer can be garbage (an old OCR pass over a poor scan): when most of its tokens are no
words, the page gets only its image, and page-ocr reads it (it OCRs pages without text); the
problems say so.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED
from bucketdigest.worker.digesters.doc_to_markdown.tidy import joined_lines

COVERED = 0.5
"""A scan's picture covers at least this share of the page."""
HIDDEN = 0.8
"""At least this share of the page's text (by area) is invisible or drawn under the picture."""
MIN_CHARACTERS = 20
WORD_SHARE = 0.5
"""A text layer in which fewer of the tokens are words is garbage."""
MAX_IMAGE_PIXELS = 4_000_000
"""The scan kept as the page's image is rendered within this many pixels."""
LETTER_SPACED = 0.3
"""A layer in which more of the tokens MuPDF reads are single letters spells its words apart."""
OTHER_TYPE = 0.75
"""Fragments of a scan's text layer whose heights are further apart than this ratio are of
two lines in type of two sizes, however level they stand."""
LOOSE = 3.0
"""Pieces of one printed line stand at most this many line heights apart, unless the page's
gutter stands between them: a justified line of a narrow column spaces its words by up to
half again a line's height, wider than a gutter may be."""
GUTTER = 0.5
"""A gap between two lines side by side, as a share of the shorter one's height, that may be
a column's gutter (level lines closer than a line's height are one line by then; a caption
set beside a column leaves it two thirds of its line's height)."""
MAX_SKEW = 0.2
"""Lines turned further than this (the sine of the angle, about 11 degrees) are not read: a
scan is often a little skewed, and the OCR's words with it."""
_EDGE = 0.12
"""Share of the page height at its top and bottom where running heads and feet stand."""
_TOKEN_EDGE = "\"'“”‘’«»()[]{}.,;:!?*"
_WORD = re.compile(
    r"[^\W\d_]+(?:['’\-][^\W\d_]+)*|\d+(?:[.,:/\-]\d+)*[^\W\d_]{0,2}|[&§%$€£-]"
    r"|(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.]+"
)
_SENTENCE_END = re.compile(r"[.!?:;\"”’)]\s*$")
_PAGE_NUMBER = re.compile(r"^\W*(?:\d{1,4}|[ivxlcdm]{1,6})\W*$", re.IGNORECASE)
_NUMBER_AT_EDGE = re.compile(r"^\W*\d{1,4}\b|\b\d{1,4}\W*$")
_VOWEL = re.compile("[aeiouy]")
_SECTION_NUMBER = re.compile(r"\(?(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?\)?")
_LETTER_SPACED = re.compile(r"(?<!\S)[^\W\d_](?: [^\W\d_]){3,}(?!\S)")
_LINE_START_SYNTAX = re.compile(r"^(#|>|\d+[.)]\s|[-+*]\s)")


@dataclass(frozen=True)
class _PageMeasure:
    """What the text of a page measures: its height, its body size and line spacing."""

    height: float
    body: float
    spacing: float
    line_height: float


@dataclass
class _Line:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float

    @property
    def height(self) -> float:
        return max(self.y1 - self.y0, 1.0)


def _hidden_share(page: pymupdf.Page, picture: pymupdf.Rect) -> float:
    """The share of the page's text area that no reader sees: invisible, or drawn before the
    picture that covers it."""
    seen_picture = False
    hidden = shown = 0.0
    for kind, box in page.get_bboxlog():
        rect = pymupdf.Rect(box)
        if kind == "fill-image" and rect.intersect(picture).get_area() > 0.5 * picture.get_area():
            seen_picture = True
        elif kind.endswith("-text"):
            area = rect.get_area()
            if kind == "ignore-text" or (not seen_picture and rect.intersects(picture)):
                hidden += area
            else:
                shown += area
    return hidden / (hidden + shown) if hidden + shown else 0.0


def is_scan_with_text(page: pymupdf.Page) -> bool:
    """Whether ``page`` is one picture covering the page with the text laid over it unseen."""
    area = page.rect.get_area()
    if area <= 0:
        return False
    pictures = [pymupdf.Rect(info["bbox"]) & page.rect for info in page.get_image_info()]
    pictures = [rect for rect in pictures if rect.get_area() >= COVERED * area]
    if not pictures:
        return False
    picture = max(pictures, key=lambda rect: rect.get_area())
    if len(page.get_text("text").strip()) < MIN_CHARACTERS:
        return False
    return _hidden_share(page, picture) >= HIDDEN


def word_share(text: str) -> float:
    """The share of ``text``'s tokens that read as words or numbers (1.0 for no tokens); a
    word set letter-spaced (``C o m p a n i a``) counts as one."""
    spaced = len(_LETTER_SPACED.findall(text))
    tokens = [token.strip(_TOKEN_EDGE) for token in _LETTER_SPACED.sub(" ", text).split()]
    tokens = [token for token in tokens if token]
    if not tokens and not spaced:
        return 1.0
    words = sum(1 for token in tokens if _WORD.fullmatch(token) and not _is_debris(token))
    return (words + spaced) / (len(tokens) + spaced)


def _is_debris(token: str) -> bool:
    """A lone letter other than a word of one letter; letters mixed in case as OCR noise
    mixes them (``tHe``, ``pQ``); a lower-case Latin word without a vowel (``zzv``)."""
    if len(token) == 1:
        return token.isalpha() and token.lower() not in "aio" and token not in "I&"
    if not token.isalpha():
        return False
    if any(a.islower() and b.isupper() for a, b in itertools.pairwise(token)):
        return True
    rest = token[1:] if token[0].isupper() else token
    return rest.isascii() and rest.islower() and not _VOWEL.search(rest)


def _flags(page: pymupdf.Page) -> int:
    """MuPDF's text flags for the page's layer: with the spaces MuPDF puts where glyphs stand
    apart, unless that spells most words letter by letter (``C h i n a``: a layer that sets
    its letters apart and its real word spaces as characters, kept without MuPDF's)."""
    tokens = page.get_text("text", flags=pymupdf.TEXTFLAGS_TEXT).split()
    single = sum(1 for token in tokens if len(token) == 1 and token.isalpha())
    if tokens and single > LETTER_SPACED * len(tokens):
        return pymupdf.TEXTFLAGS_TEXT | pymupdf.TEXT_INHIBIT_SPACES
    return pymupdf.TEXTFLAGS_TEXT


def _fragments(page: pymupdf.Page) -> list[_Line]:
    """The layer's horizontal lines as MuPDF groups them: a whole printed line for most OCR
    layers (Tesseract's renderer), a fragment of one, in no particular order, for the layers
    book-scanning OCR makes (every word a span of its own, at its own size fitted to the
    printed word's width, on a wobbling baseline): :func:`_printed_lines` puts them together.
    Such a layer sets each space as a span too, its size fitted to the gap to the next word
    laid down, tall enough when that word is of the next line for MuPDF to string it onto the
    line before ("stretched Then"): a line is cut where a word does not stand level with the
    word before it."""
    found = []
    for block in page.get_text("dict", flags=_flags(page))["blocks"]:
        for line in block.get("lines", ()):
            if abs(line["dir"][1]) > MAX_SKEW:
                continue
            pieces: list[list[dict]] = [[]]  # runs of spans whose words stand level
            last_word: _Line | None = None
            for span in line["spans"]:
                if span["text"].strip():
                    word = _fragment([span])
                    if last_word is not None and not _level(last_word, word):
                        pieces.append([])
                    last_word = word
                pieces[-1].append(span)
            found += [_fragment(p) for p in pieces if any(s["text"].strip() for s in p)]
    return found


def _fragment(spans: list[dict]) -> _Line:
    """A run of a MuPDF line's spans as one fragment: its text, and the box and size of its
    words (a space span, or MuPDF's, may stand taller than any word)."""
    text = " ".join("".join(s["text"] for s in spans).split())
    words = [s for s in spans if s["text"].strip()]
    y0 = statistics.median(s["bbox"][1] for s in words)
    y1 = statistics.median(s["bbox"][3] for s in words)
    x0, x1 = min(s["bbox"][0] for s in words), max(s["bbox"][2] for s in words)
    return _Line(text, x0, y0, x1, y1, statistics.median(s["size"] for s in words))


def _level(one: _Line, other: _Line) -> bool:
    """Whether two fragments stand level: their centres closer than half the taller one's
    height (a fragment's size is fitted to its width, so a narrow word can be tiny)."""
    return abs((one.y0 + one.y1) - (other.y0 + other.y1)) / 2 < max(one.height, other.height) / 2


def _other_type(one: _Line, other: _Line) -> bool:
    """Whether two fragments of several words each are set in type of other heights (by more
    than :data:`OTHER_TYPE`): a caption beside a column of body text, whose lines stand
    nearly level with the column's, a gap of a few points apart. A layer that gives a word a
    fragment fits each word's size to its width, so single words are not compared."""
    if min(one.text.count(" "), other.text.count(" ")) < 2:
        return False
    return min(one.height, other.height) < OTHER_TYPE * max(one.height, other.height)


def _across(left: _Line, right: _Line, gutter: tuple[float, float] | None) -> bool:
    """Whether ``gutter`` stands between ``left`` and ``right``."""
    return gutter is not None and left.x1 <= gutter[0] + 1 and gutter[1] - 1 <= right.x0


def _printed_lines(
    fragments: list[_Line], reach: float = 1.25, gutter: tuple[float, float] | None = None
) -> list[_Line]:
    """The printed lines, put together from the layer's fragments, top to bottom. Left to
    right, a fragment joins the line whose last fragment stands level with it (:func:`_level`)
    and ends close before it, by the taller one's measure (a little further after a section
    number, ``2   Overview``); on a skewed scan the last fragment is the one level with the
    next. A gap wider than ``reach`` heights (a column's gutter), the page's ``gutter``, or
    type of another height (:func:`_other_type`) starts another line. A line's height and
    size are its fragments' middle ones, so wobbling baselines cancel out."""
    lines: list[tuple[_Line, list[_Line]]] = []  # (the line, its fragments left to right)
    for fragment in sorted(fragments, key=lambda f: (f.x0, f.y0)):
        best, nearest = None, 0.0
        for n, (_, taken) in enumerate(lines):
            last = taken[-1]
            gap, height = fragment.x0 - last.x1, max(fragment.height, last.height)
            numbered = len(taken) == 1 and _SECTION_NUMBER.fullmatch(last.text) is not None
            if gap < -0.3 * height or gap > (4.0 if numbered else reach) * height:
                continue
            if _other_type(fragment, last) or _across(last, fragment, gutter):
                continue
            offset = abs((fragment.y0 + fragment.y1) - (last.y0 + last.y1))
            if _level(fragment, last) and (best is None or offset < nearest):
                best, nearest = n, offset
        if best is None:
            copy = dataclasses.replace(fragment, size=0.0)
            lines.append((copy, [fragment]))
            continue
        whole, taken = lines[best]
        last = taken[-1]
        touching = fragment.x0 - last.x1 < 0.1 * min(fragment.height, last.height)
        whole.text += ("" if touching else " ") + fragment.text
        whole.x1 = max(whole.x1, fragment.x1)
        taken.append(fragment)
    for whole, taken in lines:
        whole.y0 = statistics.median(f.y0 for f in taken)
        whole.y1 = statistics.median(f.y1 for f in taken)
        whole.size = statistics.median(f.size for f in taken)
    return sorted((whole for whole, _ in lines), key=lambda line: (line.y0 + line.y1) / 2)


def _rows(lines: list[_Line]) -> list[list[_Line]]:
    """Lines that stand side by side (sharing half their height), each row left to right."""
    rows: list[list[_Line]] = []
    for line in lines:
        row = next(
            (
                row
                for row in reversed(rows[-3:])
                if min(row[0].y1, line.y1) - max(row[0].y0, line.y0)
                > 0.5 * min(row[0].height, line.height)
            ),
            None,
        )
        if row is None:
            rows.append([line])
        else:
            row.append(line)
    return [sorted(row, key=lambda line: line.x0) for row in rows]


def _gutter(lines: list[_Line], width: float) -> tuple[float, float] | None:
    """The gap between two columns: the x-range in the page's middle where the most rows
    have a gap between two lines (the columns may share only a band of the page, a page whose
    columns change within it), and the lines right of it start flush, as a column's do (wide
    word spaces of a loose line, or a name set right, do not); None unless four rows agree."""
    middle = range(int(0.25 * width), int(0.75 * width) + 1)
    apart = dict.fromkeys(middle, 0)
    gaps: list[tuple[float, float]] = []  # (gap start, gap end: the right line's start)
    for row in _rows(lines):
        for left, right in itertools.pairwise(row):
            if right.x0 - left.x1 >= GUTTER * min(left.height, right.height):
                gaps.append((left.x1, right.x0))
                for x in range(
                    max(int(left.x1) + 1, middle.start), min(int(right.x0), middle.stop)
                ):
                    apart[x] += 1
    most = max(apart.values(), default=0)
    if most < 4:
        return None
    start = next(x for x, count in apart.items() if count == most)
    end = start
    while end + 1 in apart and apart[end + 1] == most:
        end += 1
    starts = [x1 for x0, x1 in gaps if x0 < start + 1 and end < x1]
    typical = statistics.median(starts)
    height = statistics.median(line.height for line in lines)
    if sum(1 for x in starts if abs(x - typical) <= height) < 4:
        return None
    return (start, end + 1)


def _reading_order(lines: list[_Line], width: float) -> list[list[_Line]]:
    """The page's (merged) lines as runs read top to bottom, without OCR noise (a picture's
    specks read as letters): a single column, or, where the page has a gutter, band by band
    (lines across the gutter end a band and make a run of their own) the left column's
    lines, then the right's."""
    lines = [line for line in lines if word_share(line.text) >= WORD_SHARE]
    gutter = _gutter(lines, width)
    if gutter is None:
        return [lines]
    runs: list[list[_Line]] = []
    across: list[_Line] = []
    left: list[_Line] = []
    right: list[_Line] = []
    for line in lines:
        if gutter[0] + 1 < line.x1 and line.x0 < gutter[1] - 1:
            runs += [run for run in (left, right) if run]
            left, right = [], []
            across.append(line)
            continue
        if across:
            runs.append(across)
            across = []
        (left if line.x1 <= gutter[0] + 1 else right).append(line)
    runs += [run for run in (across, left, right) if run]
    return runs


def _is_running(line: _Line, neighbour: _Line | None, top: bool, page: _PageMeasure) -> bool:
    """Whether ``line``, the first (``top``) or last of the page's text, stands apart in the
    page's margin as a running head or foot: a page number, or a short line far from the
    text, smaller than the body, with a number at an end, or in capitals."""
    if (line.y1 > _EDGE * page.height) if top else (line.y0 < (1 - _EDGE) * page.height):
        return False
    if _PAGE_NUMBER.match(line.text):
        return True
    if len(line.text.split()) > 15 or neighbour is None:
        return False
    apart = (neighbour.y0 - line.y1) if top else (line.y0 - neighbour.y1)
    letters = sum(c.isalpha() for c in line.text)
    shouting = letters > 3 and sum(c.isupper() for c in line.text) > 0.6 * letters
    smaller = line.size < 0.85 * page.body
    numbered = bool(_NUMBER_AT_EDGE.search(line.text))
    return apart > 1.2 * page.spacing or smaller or numbered or shouting


def _running_lines(
    lines: list[_Line], page: _PageMeasure
) -> tuple[list[_Line], list[_Line], list[_Line]]:
    """(running heads, the text's lines, running feet): up to two rows at each edge, a row
    being the lines level with each other (a head's page number, title and chapter mark stand
    apart on one row), read as one line left to right."""
    heads: list[_Line] = []
    feet: list[_Line] = []
    while len(heads) < 2:
        row, rest = _row_of(lines[0], lines) if lines else ([], [])
        if not rest or not _is_running(_joined(row), rest[0], True, page):
            break
        heads.append(_joined(row))
        lines = rest
    while len(feet) < 2:
        row, rest = _row_of(lines[-1], lines) if lines else ([], [])
        if not rest or not _is_running(_joined(row), rest[-1], False, page):
            break
        feet.insert(0, _joined(row))
        lines = rest
    return heads, lines, feet


def _row_of(line: _Line, lines: list[_Line]) -> tuple[list[_Line], list[_Line]]:
    """(the lines level with ``line``, left to right; the others, in order)."""
    row = [
        other
        for other in lines
        if min(other.y1, line.y1) - max(other.y0, line.y0) > 0.5 * min(other.height, line.height)
    ]
    return sorted(row, key=lambda other: other.x0), [other for other in lines if other not in row]


def _joined(row: list[_Line]) -> _Line:
    return _Line(
        " ".join(line.text for line in row),
        min(line.x0 for line in row),
        min(line.y0 for line in row),
        max(line.x1 for line in row),
        max(line.y1 for line in row),
        max(line.size for line in row),
    )


def _paragraphs(run: list[_Line], page: _PageMeasure) -> list[str]:
    """A run of lines as Markdown blocks: paragraphs and headings. Lines in smaller type
    (:data:`OTHER_TYPE`) that stand between two lines of one paragraph (a caption beside the
    column, an engraving's specks read as letters) follow that paragraph instead of cutting
    it in two."""
    left = sorted(line.x0 for line in run)[len(run) // 10]
    right = sorted(line.x1 for line in run)[-1 - len(run) // 10]
    blocks: list[str] = []
    paragraph: list[str] = []
    aside: list[str] = []

    def close() -> None:
        for lines in (paragraph, aside):
            if lines:
                text = joined_lines(lines)
                blocks.append("\\" + text if _LINE_START_SYNTAX.match(text) else text)
                lines.clear()

    def small(line: _Line) -> bool:
        return line.height < OTHER_TYPE * page.line_height

    steps = [
        b.y0 - a.y0 for a, b in itertools.pairwise(run) if 0 < b.y0 - a.y0 < 3 * page.line_height
    ]
    spacing = statistics.median(steps) if steps else page.spacing

    def ends_paragraph(previous: _Line, line: _Line) -> bool:
        step = line.y0 - previous.y0
        indent = page.line_height
        indented = line.x0 > left + indent and previous.x0 <= left + indent
        short = previous.x1 < right - 3 * indent and _SENTENCE_END.search(previous.text)
        return step > 1.5 * spacing or indented or bool(short)

    previous: _Line | None = None
    held: list[_Line] = []  # smaller lines after a line of an open paragraph
    queue = collections.deque(run)
    while queue or held:
        if not queue:  # the run ends after them: they are read where they stand
            close()
            queue.extend(held)
            held = []
        line = queue.popleft()
        if previous is not None and paragraph and not small(previous) and small(line):
            held.append(line)
            continue
        if held:
            if previous is not None and not ends_paragraph(previous, line):
                aside += [h.text for h in held]  # the paragraph goes on past them
            else:
                close()
                queue.extendleft(reversed([*held, line]))
                held = []
                continue
            held = []
        if (
            line.size >= 1.5 * page.body
            and len(line.text.split()) <= 10
            and not _SENTENCE_END.search(line.text)
        ):
            close()
            blocks.append("#" * (ENCODED + round(line.size)) + " " + line.text)
            previous = None
            continue
        if previous is not None and ends_paragraph(previous, line):
            close()
        paragraph.append(line.text)
        previous = line
    close()
    return blocks


def scan_markdown(
    page: pymupdf.Page, image_dir: Path, image: tuple[str, int] | None
) -> tuple[str, bool]:
    """The Markdown of a scanned page with a text layer, and whether its text layer is good;
    a garbage layer gives only the page's image (page-ocr reads it then). With ``image``
    (format, dpi) the scan is written to ``image_dir`` and linked."""
    link = ""
    if image is not None:
        image_format, dpi = image
        name = f"scan-{page.number + 1:04d}.{image_format}"
        scale = min(dpi / 72, (MAX_IMAGE_PIXELS / max(page.rect.get_area(), 1.0)) ** 0.5)
        page.get_pixmap(matrix=pymupdf.Matrix(scale, scale)).save(image_dir / name)
        link = f"![page {page.number + 1}]({image_dir / name})"
    lines = _printed_lines(_fragments(page))
    # a loose line's word spaces may be as wide as a gutter: its pieces join where none stands
    gutter = _gutter(
        [line for line in lines if word_share(line.text) >= WORD_SHARE], page.rect.width
    )
    lines = _printed_lines(lines, LOOSE, gutter)
    if word_share(" ".join(line.text for line in lines)) < WORD_SHARE:
        return link + "\n", False
    if not lines:
        return link + "\n", True
    heights = [line.height for line in lines]
    steps = [
        b.y0 - a.y0
        for a, b in itertools.pairwise(lines)
        if 0 < b.y0 - a.y0 < 3 * statistics.median(heights)
    ]
    measure = _PageMeasure(
        page.rect.height,
        statistics.median(line.size for line in lines),
        statistics.median(steps) if steps else statistics.median(heights),
        statistics.median(heights),
    )
    heads, lines, feet = _running_lines(lines, measure)
    out = [f"<!--running header--> {line.text}" for line in heads]
    for run in _reading_order(lines, page.rect.width):
        out += _paragraphs(run, measure)
    out += [f"<!--running footer--> {line.text}" for line in feet]
    return "\n\n".join([*out, link]).strip() + "\n", True
