"""Running lines told by what a reader sees on the page itself: for documents of one page or a
few, where repetition across pages (:mod:`running`) cannot find them.

A block of text is a running head or foot when it stands in the top or bottom band of the page,
set apart from the text (a body size or more), short, and marked as such by what it looks like:
smaller than the body or in another font, a page number's shape, or the words of a stamp (a
download line, a revision, a copyright, an address on the web). A block larger than the body
(a title), a footnote (it opens with its mark), a caption ("Table 2. ...": a float set at the
top of a page), a block at the top that starts a column of the page (a letter's sender,
aligned with the lines under it) and one at the foot that goes on a run of blocks like it (a
list's last entry) are not. The converter's
Markdown then gets those lines marked as running lines, which :mod:`running` takes out of the
text into ``pages.json``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pymupdf

from bucketdigest.worker.digesters.doc_to_markdown.headers import ENCODED
from bucketdigest.worker.digesters.doc_to_markdown.running import is_page_number

BAND = 0.12
"""Share of the page height at its top and bottom where running lines stand."""
MAX_WORDS = 25
EDGE_LINES = 6
"""How many of the Markdown's first (or last) lines a running head (or foot) is looked for in."""
_STAMP = re.compile(
    r"downloaded|accessed|printed|retrieved|copyright|©|\(c\)|all rights reserved|\brev(?:ision)?\b"
    r"|\bversion\b|\bdraft\b|https?://|www\.|doi|\bpage\b|\bseite\b|\bvol\b|volume|issue"
    r"|proceedings|journal|conference|@",
    re.IGNORECASE,
)
_FOOTNOTE_MARK = "*\u2217†‡§¶"
_SUPERSCRIPT = 1
_NORMALISED = re.compile(r"[\W_]+")
_MARKED = re.compile(r"^<!--running (header|footer)--> ?(.*)$")
_SIZED_HEADING = re.compile(f"^(#{{{ENCODED},}}) ")
"""A heading as the converter marks it while converting: ``#`` its font size plus ENCODED."""
_NUMBERED = re.compile(r"^\W*\d|\d\W*$")
_CAPTION = re.compile(
    r"^\W*(?:table|tab\.|figure|fig\.|chart|plate|exhibit|scheme|listing|algorithm|abbildung"
    r"|abb\.|tabelle|tableau|figura|tabla|tabel)\s*(?:\d+|[ivxlc]+\b)",
    re.IGNORECASE,
)
"""A caption's label: a table or figure floated to the top of a page is set like a head."""


@dataclass(frozen=True)
class _Block:
    text: str
    lines: tuple[str, ...]
    box: pymupdf.Rect
    size: float
    fonts: frozenset[str]
    footnote: bool

    @property
    def caption(self) -> bool:
        return bool(_CAPTION.match(self.text))


def _blocks(blocks: list[dict]) -> list[_Block]:
    found = []
    for block in blocks:
        lines = [
            "".join(span["text"] for span in line["spans"]).strip()
            for line in block.get("lines", ())
            if abs(line["dir"][1]) < 1e-3
        ]
        spans = [
            span
            for line in block.get("lines", ())
            for span in line["spans"]
            if span["text"].strip()
        ]
        if not spans or not any(lines):
            continue
        first = spans[0]
        footnote = (
            bool(first["flags"] & _SUPERSCRIPT)
            or first["text"].lstrip()[:1] in _FOOTNOTE_MARK
            or _raised_number(first, spans[1:])
        )
        found.append(
            _Block(
                " ".join(line for line in lines if line),
                tuple(line for line in lines if line),
                pymupdf.Rect(block["bbox"]),
                max(span["size"] for span in spans),
                frozenset(_family(span["font"]) for span in spans),
                footnote,
            )
        )
    return found


def _raised_number(first: dict, rest: list[dict]) -> bool:
    """Whether a block opens with a footnote's number: digits alone, set smaller than the
    words after them (a superscript MuPDF does not flag)."""
    return bool(
        rest
        and first["text"].strip().isdigit()
        and first["size"] < 0.85 * rest[0]["size"]
        and first["bbox"][3] < rest[0]["bbox"][3] - 0.5
    )


def _family(font: str) -> str:
    """A font's name without its style (``Times-Bold`` and ``Times-Roman`` are one face)."""
    return re.split(r"[-,+]", font.split("+")[-1])[0].rstrip("0123456789").casefold()


def _body(blocks: list[_Block]) -> tuple[float, str]:
    """The size and face most of the page's text is set in."""
    sizes: Counter[float] = Counter()
    fonts: Counter[str] = Counter()
    for block in blocks:
        sizes[round(block.size)] += len(block.text)
        for font in block.fonts:
            fonts[font] += len(block.text)
    return (
        float(sizes.most_common(1)[0][0]) if sizes else 10.0,
        fonts.most_common(1)[0][0] if fonts else "",
    )


def _starts_a_column(block: _Block, others: list[_Block], body: float) -> bool:
    """Whether blocks set flush with ``block`` follow close under it: a letter's sender, an
    address, not a running head. (At the foot, small print flush with the text above it is a
    footer all the same: a publisher's line under the footnotes.)"""
    for other in others:
        gap = other.box.y0 - block.box.y1
        if 0 <= gap <= 3 * body and abs(other.box.x0 - block.box.x0) <= 2:
            return True
    return False


def _goes_on_a_run(block: _Block, others: list[_Block]) -> bool:
    """Whether ``block`` goes on a run of blocks set like it above it (the same left edge
    and size, as evenly spaced): a list's or a bibliography's last entry at the foot of a
    page, not a foot (a publisher's line under footnotes stands further off)."""
    above = sorted(
        (
            other
            for other in others
            if other.box.y1 <= block.box.y0 + 1
            and abs(other.box.x0 - block.box.x0) <= 6
            and abs(other.size - block.size) <= 0.5
        ),
        key=lambda other: -other.box.y1,
    )
    if len(above) < 2:
        return False
    gap, previous_gap = block.box.y0 - above[0].box.y1, above[0].box.y0 - above[1].box.y1
    return previous_gap >= 0 and abs(gap - previous_gap) <= max(3.0, 0.3 * block.size)


def _rules(page: pymupdf.Page) -> list[pymupdf.Rect]:
    """Horizontal rules drawn across a good part of the page (what sets a foot apart)."""
    found = []
    for drawing in page.get_drawings():
        box = pymupdf.Rect(drawing["rect"])
        if box.height <= 2 and box.width >= 0.25 * page.rect.width:
            found.append(box)
    return found


def _normalised(text: str, fold: bool = True) -> str:
    return _NORMALISED.sub("", text.casefold() if fold else text)


class _Margins:
    """A page's blocks of text measured against its body, for telling its running lines."""

    def __init__(self, page: pymupdf.Page) -> None:
        self.page = page
        text = page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)["blocks"]
        self.blocks = _blocks(text)
        self.stamps = side_stamps(text, page.rect.width)
        self.body, self.face = _body(self.blocks)
        self._rules: list[pymupdf.Rect] | None = None

    def _ruled(self, low: float, high: float) -> bool:
        """Whether a rule is drawn between the heights ``low`` and ``high``."""
        if self._rules is None:
            self._rules = _rules(self.page)
        return any(low <= (rule.y0 + rule.y1) / 2 <= high for rule in self._rules)

    def kind(self, block: _Block) -> str | None:
        """``header`` or ``footer`` if ``block`` is a running line, else None."""
        height = self.page.rect.height
        top = block.box.y1 <= BAND * height
        if not top and block.box.y0 < (1 - BAND) * height:
            return None
        text_side = [  # the page's text beyond the band (other running lines stand in it)
            other
            for other in self.blocks
            if (other.box.y0 > BAND * height if top else other.box.y1 < (1 - BAND) * height)
        ]
        if not text_side or block.footnote or block.caption or len(block.text.split()) > MAX_WORDS:
            return None
        if top:
            nearest = min(other.box.y0 for other in text_side)
            apart, between = nearest - block.box.y1, (block.box.y1, nearest)
        else:
            nearest = max(other.box.y1 for other in text_side)
            apart, between = block.box.y0 - nearest, (nearest, block.box.y0)
        numbered = is_page_number(block.text)
        if not numbered and (apart < self.body or block.size > self.body + 0.5):
            return None
        looks_apart = (
            numbered
            or block.size < 0.9 * self.body
            or self.face not in block.fonts
            or bool(_STAMP.search(block.text))
            or self._ruled(*between)
        )
        others = [other for other in self.blocks if other is not block]
        if not looks_apart or (top and _starts_a_column(block, others, self.body)):
            return None
        if not top and not numbered and _goes_on_a_run(block, others):
            return None
        return "header" if top else "footer"

    def reads_as_text(self, block: _Block) -> bool:
        """Whether ``block`` is set as the page's own sentences are: in the body's size and
        face, several words, no number at either end and not in capitals (a running head
        often is all of these; a letter's last line is none)."""
        letters = [c for c in block.text if c.isalpha()]
        return (
            abs(block.size - self.body) <= 0.5
            and self.face in block.fonts
            and len(block.text.split()) >= 3
            and not _NUMBERED.search(block.text)
            and sum(c.isupper() for c in letters) <= 0.6 * len(letters)
        )

    def block_of(self, line: str) -> _Block | None:
        """The block whose text is the Markdown line ``line``, or one of whose lines is: one
        in the same case first (a running head in capitals, the chapter's title under it), of
        the heading's size when the line is a heading."""
        heading = _SIZED_HEADING.match(line)
        size = len(heading[1]) - ENCODED if heading else None
        for fold in (False, True):
            key = _normalised(line, fold)
            if not key:
                return None
            found = [
                block
                for block in self.blocks
                if key in {_normalised(text, fold) for text in (block.text, *block.lines)}
            ]
            if found:  # a heading's size tells it from a running head of the same words
                return min(found, key=lambda b: 0 if size is None else abs(b.size - size))
        return None

    def inside(self, block: _Block) -> bool:
        """Whether ``block`` stands clear of the page's top and bottom bands."""
        height = self.page.rect.height
        return block.box.y0 > BAND * height and block.box.y1 < (1 - BAND) * height


def side_stamps(blocks: list[dict], width: float) -> list[str]:
    """Lines set along a side margin, turned 90 or 270 degrees (a download stamp, a journal's
    name up the edge): never the page's own text. A turned line away from the side bands (a
    table's column head, a chart's axis) is not one."""
    found = []
    for block in blocks:
        for line in block.get("lines", ()):
            dx, dy = line["dir"]
            box = pymupdf.Rect(line["bbox"])
            turned = abs(dx) < 1e-3 and abs(abs(dy) - 1) < 1e-3
            if turned and (box.x1 <= BAND * width or box.x0 >= (1 - BAND) * width):
                text = " ".join("".join(span["text"] for span in line["spans"]).split())
                if text:
                    found.append(text)
    return found


def with_running_blocks(page: pymupdf.Page, markdown: str) -> str:
    """The page's Markdown with the running blocks a reader sees marked as running lines
    (among its first lines for a head, its last for a foot; a stamp along a side margin,
    wherever the converter put it, or added when it left it out), and lines the layout model
    took for running ones that read as the page's own text (its last paragraph, set like the
    body with nothing setting it apart: :meth:`_Margins.reads_as_text`; a caption; a
    footnote; a heading whose block stands clear of the top and bottom bands) given back to the
    text."""
    margins = _Margins(page)
    markdown = _with_stamps(markdown, margins.stamps)
    if len(margins.blocks) < 2:
        return markdown
    lines = markdown.split("\n")
    for number, line in enumerate(lines):
        marked = _MARKED.match(line)
        if marked is not None:
            block = margins.block_of(marked[2])
            if (
                block is not None
                and margins.kind(block) is None
                and (
                    margins.reads_as_text(block)
                    or block.caption
                    or block.footnote
                    or (margins.inside(block) and _SIZED_HEADING.match(marked[2]))
                )
            ):
                lines[number] = marked[2]
    texts = [n for n, line in enumerate(lines) if line.strip() and not line.startswith(("|", "!["))]
    for block in margins.blocks:
        kind = margins.kind(block)
        if kind is None:
            continue
        wanted = {_normalised(x) for x in block.lines} - {""}
        whole = _normalised(block.text)
        near = texts[:EDGE_LINES] if kind == "header" else texts[::-1][:EDGE_LINES]
        for number in near:  # from the page's edge in: a heading further in with the same
            line = lines[number]  # words (a chapter's title under its running head) stays
            marked = _MARKED.match(line)
            key = _normalised(marked[2] if marked else line)
            if key == whole or key in wanted:
                if not marked:
                    lines[number] = f"<!--running {kind}--> {' '.join(line.split())}"
                wanted.discard(key)
                if key == whole or not wanted:
                    break
    return "\n".join(lines)


def _with_stamps(markdown: str, stamps: list[str]) -> str:
    """``markdown`` with the side ``stamps`` out of its text, marked as running footers."""
    if not stamps:
        return markdown
    keys = {_normalised(stamp) for stamp in stamps}
    kept = [line for line in markdown.split("\n") if _normalised(line) not in keys or not line]
    marked = [f"<!--running footer--> {stamp}" for stamp in stamps]
    return "\n".join([*kept, "", *marked])
