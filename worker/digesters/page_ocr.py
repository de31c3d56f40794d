"""page-ocr: text for the pages that have no text layer (scans, photos), via Tesseract, and
PP-OCR where Tesseract fails.

PyMuPDF renders the page; Tesseract's command line reads it (from the system's packages,
Debian: ``tesseract-ocr``, which brings English; PyMuPDF's language data). OCR costs about a
thousand times more than reading a text layer, so only pages whose Markdown holds no text are
OCR'd. Each page keeps Tesseract's words with their confidence (``ocr/NNNN.tsv``); its text
(``ocr/NNNN.md``) holds the lines Tesseract is sure of. A page Tesseract reads mostly noise
of is read again by PP-OCR (:mod:`~bucketdigest.worker.rapid_ocr`: Chinese, large
lettering, labels); its lines go to ``ocr/NNNN.rapidocr.tsv`` and those it is sure of become
the page's text. A page neither reads is doubtful: its best reading goes into the page's OCR
text between ``<!--doubtful-->`` marks (a person sees it; search, tags and summaries leave it
out), Tesseract's text is kept aside too (``ocr/NNNN.doubtful.txt``), and the problems name the
page.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

from bucketdigest.shared.errors import DigestError
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.pagetext import doubtful_block, has_text
from bucketdigest.shared.result import (
    PAGE_INDEX,
    PAGES_DIR,
    OcrAside,
    ocr_aside_member,
    ocr_member,
    page_number,
)
from bucketdigest.worker import rapid_ocr, tesseract
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.predecessor import Predecessor, open_predecessor, read_page_index
from bucketdigest.worker.tesseract import LINE_FLOOR, OcrPage, installed, read_pixmap, tessdata

_BLANK_LINES = re.compile(r"\n{3,}")
MAX_PIXELS = 17_500_000
"""The most pixels a page is rendered at for Tesseract: an A3 page at 300 dpi (3,508 by 4,961;
Tesseract's memory grows with them). A poster of 250 by 500 inches at 300 dpi would be 11
gigapixels, which MuPDF refuses ("Overly large image") after a long try, three attempts over;
its scan is rarely that fine anyway."""


SMALL_PAGE_PIXELS = 3000
"""A page is rendered at least this many pixels on its long side (up to :data:`MAX_DPI`): a
small page (a pamphlet scanned at its size, a photo of a card) at 300 dpi gives Tesseract
letters too few pixels high; on the 2.8-inch-wide page of a scanned Senate document, 600 dpi
read the heading and every line that 300 dpi garbled."""
MAX_DPI = 600
ENDPOINT_DPI = 150
"""Vision models take pages at about 1,000-1,500 pixels a side (olmOCR: 1,288 on the long
side); more costs upload time and tokens, not accuracy."""


def page_dpi(width_pt: float, height_pt: float, dpi: int) -> int:
    """``dpi``, raised for a small page (:data:`SMALL_PAGE_PIXELS`), lowered so a page of
    that size renders in at most :data:`MAX_PIXELS`."""
    dpi = max(dpi, min(MAX_DPI, int(SMALL_PAGE_PIXELS * 72 / max(width_pt, height_pt, 1))))
    pixels = width_pt * height_pt * (dpi / 72) ** 2
    if pixels <= MAX_PIXELS:
        return dpi
    return max(1, int(dpi * (MAX_PIXELS / pixels) ** 0.5))


def tesseract_pixmap(page: Any, dpi: int) -> Any:
    """``page`` at ``dpi`` in grey, as Tesseract reads best. MuPDF renders in colour unless
    asked: three bytes a pixel to render and hand over, and Tesseract's library (5.5) read no
    word off 2 of the OCR bench's 16 scanned pages with anything in colour (a chart, a page
    of a multi-page scan) that it read in grey; in grey the 16 read in 14.2 s instead of 19.0,
    with the same facts (docs/benchmarks.md)."""
    import pymupdf

    return page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)


def _kept(
    ctx: DigestContext, predecessor: Predecessor, textless: list[int], content: dict[str, Any]
) -> dict[int, bytes]:
    """The OCR text of pages the predecessor OCR'd from equal page content, with the same
    Tesseract, language and resolution (by page number; empty when it found no text)."""
    record = predecessor.completed("ocr")
    before = record.content if record is not None else None
    same = ("engine", "language", "dpi")
    if not before or any(before.get(key) != content[key] for key in same):
        return {}
    index = ctx.tree / PAGE_INDEX
    fingerprints, _ = read_page_index(index.read_bytes() if index.is_file() else None)
    done = set(before.get("pages", []))
    kept = {}
    for number in textless:
        if number > len(fingerprints):
            continue
        was = predecessor.pages_by_fingerprint.get(fingerprints[number - 1])
        if was in done:
            kept[number] = predecessor.read(ocr_member(was)) or b""
            _keep_aside(predecessor, before, was, number, content)
    return kept


def _keep_aside(
    predecessor: Predecessor, before: dict[str, Any], was: int, number: int, content: dict
) -> None:
    """The words and doubtful text page ``was`` of the predecessor kept, as page ``number``'s,
    with its confidence and doubt recorded as they were."""
    for kind in OcrAside.ALL:
        data = predecessor.read(ocr_aside_member(was, kind))
        if data is not None:
            content.setdefault("aside", {})[ocr_aside_member(number, kind)] = data
    for key in ("confidence", "doubtful", "second_reader"):
        if str(was) in before.get(key, {}):
            content.setdefault(key, {})[str(number)] = before[key][str(was)]


class PageOcr(Digester):
    name = "page-ocr"
    label = "OCR"
    description = (
        "Reads the text of pages without a text layer with Tesseract, and with PP-OCR "
        "where Tesseract fails; the text is added to those pages in document.md."
    )
    version = "2"
    outputs = ("ocr",)
    needs = ("markdown",)
    kinds = frozenset({FileKind.DOCUMENT, FileKind.IMAGE, FileKind.NOTEBOOK})

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        textless = [
            page_number(member)
            for member in ctx.members(PAGES_DIR)
            if not has_text(ctx.read_text(member))
        ]
        content = {
            "engine": "",
            "language": ctx.settings.ocr_language,
            "dpi": ctx.settings.ocr_dpi,
            "pages": textless,
            "characters": 0,
        }
        if not textless:
            return {"ocr": Produced({}, content)}
        content["engine"] = f"{tesseract.version()} (lines of mean confidence >= {LINE_FLOOR:g})"
        if (second := rapid_ocr.version()) is not None:
            floor = rapid_ocr.SCORE_FLOOR
            content["engine"] += f", else {second} (lines of score >= {floor:g})"
        if (endpoint := ctx.settings.ocr_server) is not None:
            content["engine"] = f"{endpoint.model} at {endpoint.url}, else {content['engine']}"
        predecessor = open_predecessor(ctx.predecessor)
        files = _kept(ctx, predecessor, textless, content) if predecessor else {}
        todo = [n for n in textless if n not in files]
        files.update(self._ocr(ctx, todo, content) if todo else {})
        if "doubtful" in content:
            pages = ", ".join(sorted(content["doubtful"], key=int))
            content.setdefault("problems", []).append(
                f"OCR of page(s) {pages} is mostly noise (handwriting, a faint scan, a "
                "drawing): its best reading is in the page marked doubtful, out of search, "
                "tags and summaries (an --ocr-endpoint vision model reads handwriting)"
            )
        files = {ocr_member(n): text for n, text in sorted(files.items()) if text}
        content["characters"] = sum(len(text) for text in files.values())
        files.update(content.pop("aside", {}))
        if predecessor is not None:
            content["from_predecessor"] = predecessor.tally(len(textless) - len(todo), len(todo))
        return {"ocr": Produced(files, content)}

    def _ocr(
        self, ctx: DigestContext, numbers: list[int], content: dict[str, Any]
    ) -> dict[int, bytes]:
        """Each page's trusted OCR text; its words go aside (``content["aside"]``). A page too
        large for :data:`MAX_PIXELS` at the chosen dpi is rendered at a lower one, recorded in
        ``content["lower_dpi"]`` (a small one at a higher one, ``content["higher_dpi"]``); a
        doubtful page's confidence in ``content["doubtful"]``."""
        from bucketdigest.worker.digesters.doc_to_markdown.repair import open_pages

        tessdata_dir, binary = tessdata(), shutil.which("tesseract") or "tesseract"
        language, missing = installed(ctx.settings.ocr_language, tessdata_dir)
        if missing:
            content.setdefault("problems", []).append(
                f"Tesseract here has no data for {', '.join(missing)}: read as {language}"
            )
        files: dict[int, bytes] = {}
        aside: dict[str, bytes] = {}
        with open_pages(ctx.source, ctx.file.ext, ctx.scratch) as doc:
            for number in numbers:
                page = doc[number - 1]
                dpi = page_dpi(page.rect.width, page.rect.height, ctx.settings.ocr_dpi)
                if dpi != ctx.settings.ocr_dpi:
                    lower = "lower_dpi" if dpi < ctx.settings.ocr_dpi else "higher_dpi"
                    content.setdefault(lower, {})[str(number)] = dpi
                if ctx.settings.ocr_server is not None:
                    text = self._from_endpoint(ctx, number, page, content)
                    if text is not None:
                        files[number] = (text + "\n").encode() if text else b""
                        continue
                try:
                    read = read_pixmap(
                        tesseract_pixmap(page, dpi), language, tessdata_dir, binary, "page"
                    )
                except DigestError as exc:
                    raise DigestError(f"page {number}: {exc}") from exc
                text = trusted_text(page, number, read, aside, content)
                text = _BLANK_LINES.sub("\n\n", text).strip()
                files[number] = (text + "\n").encode() if text else b""
        content.setdefault("aside", {}).update(aside)
        return files

    @staticmethod
    def _from_endpoint(
        ctx: DigestContext, number: int, page: Any, content: dict[str, Any]
    ) -> str | None:
        """The vision endpoint's text of a page (rendered at :data:`ENDPOINT_DPI`), or None
        when it failed (noted in ``content["problems"]``: Tesseract reads the page instead)."""
        from bucketdigest.worker.llm import read_page_image

        assert ctx.settings.ocr_server is not None
        dpi = min(ENDPOINT_DPI, page_dpi(page.rect.width, page.rect.height, ENDPOINT_DPI))
        image = page.get_pixmap(dpi=dpi)
        try:
            text = read_page_image(image.tobytes("png"), ctx.settings.ocr_server)
        except DigestError as exc:
            content.setdefault("problems", []).append(
                f"page {number}: the OCR endpoint failed ({exc}); Tesseract read it"
            )
            return None
        content.setdefault("by_endpoint", []).append(number)
        return text


def _second_reading(page: Any, content: dict[str, Any]) -> rapid_ocr.RapidPage | None:
    """PP-OCR's reading of the page (rendered at :func:`~bucketdigest.worker.rapid_ocr.zoom`),
    or None when it cannot load (noted once in ``content["problems"]``)."""
    import pymupdf

    if rapid_ocr.version() is None:
        return None
    zoom = rapid_ocr.zoom(page.rect.width, page.rect.height)
    image = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom)).tobytes("png")
    try:
        return rapid_ocr.read_image(image)
    except DigestError as exc:
        problems = content.setdefault("problems", [])
        if str(exc) not in problems:
            problems.append(f"{exc}; pages Tesseract cannot read stay without text")
        return None


def trusted_text(
    page: Any, number: int, read: OcrPage, aside: dict[str, bytes], content: dict[str, Any]
) -> str:
    """The page's trusted text: Tesseract's, else (it read mostly noise) PP-OCR's (its score
    in ``content["second_reader"]``), else none: the page is doubtful (``content["doubtful"]``),
    Tesseract's words kept aside. A page Tesseract finds no words on (blank, a picture) is
    not read again: on the corpus's 23 such pages PP-OCR found nothing it was sure of, at up
    to 0.5 GB a page."""
    if read.words:
        aside[ocr_aside_member(number, OcrAside.WORDS)] = read.tsv.encode()
        content.setdefault("confidence", {})[str(number)] = read.confidence
    if not read.doubtful:
        return read.trusted
    second = _second_reading(page, content)
    if second is not None and second.trusted:
        aside[ocr_aside_member(number, OcrAside.SECOND_READER)] = second.tsv.encode()
        content.setdefault("second_reader", {})[str(number)] = second.confidence
        return second.trusted
    aside[ocr_aside_member(number, OcrAside.DOUBTFUL)] = (read.text + "\n").encode()
    content.setdefault("doubtful", {})[str(number)] = read.confidence
    return doubtful_block(read.text, read.confidence)
