"""Tesseract's words with their confidence, and the page text we trust from them.

Tesseract reads a blank page's grain or a drawing as words (``, =~ » be 7 7 = = ee``) and
handwriting as near-random letters, each with a low confidence. Its command line gives every
word's confidence (``tsv``), which the OCR inside PyMuPDF does not: a line whose words it is
unsure of (mean under :data:`LINE_FLOOR`) is left out, and a page where most words are so is
*doubtful*: its text is kept aside, not searched, tagged or summarised.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bucketdigest.shared.errors import DigestError

if TYPE_CHECKING:
    import pymupdf

LINE_FLOOR = 55.0
"""A line's mean word confidence (0-100, weighted by length) below which it is noise."""
TRUSTED_SHARE = 0.5
"""A page whose trusted lines hold less than this share of its characters is doubtful."""
TIMEOUT = 600


@dataclass(frozen=True)
class Word:
    text: str
    confidence: float
    line: tuple[int, int, int]
    """(block, paragraph, line) as Tesseract numbers them."""


@dataclass(frozen=True)
class OcrPage:
    """The words Tesseract read on one page, and the raw ``tsv`` they came from."""

    words: tuple[Word, ...]
    tsv: str

    def _lines(self) -> list[list[Word]]:
        lines: dict[tuple[int, int, int], list[Word]] = {}
        for word in self.words:
            lines.setdefault(word.line, []).append(word)
        return list(lines.values())

    @staticmethod
    def _confidence(words: list[Word]) -> float:
        size = sum(len(w.text) for w in words)
        return sum(w.confidence * len(w.text) for w in words) / size if size else 0.0

    @property
    def confidence(self) -> float:
        """Mean word confidence, weighted by length (0 for a page with no words)."""
        return round(self._confidence(list(self.words)), 1)

    def _text(self, lines: list[list[Word]]) -> str:
        paragraphs: list[list[str]] = []
        last: tuple[int, int] | None = None
        for words in lines:
            if words[0].line[:2] != last:
                paragraphs.append([])
                last = words[0].line[:2]
            paragraphs[-1].append(" ".join(w.text for w in words))
        return "\n\n".join(_joined(lines) for lines in paragraphs)

    def _trusted_lines(self) -> list[list[Word]]:
        """The lines whose mean confidence clears :data:`LINE_FLOOR`."""
        return [words for words in self._lines() if self._confidence(words) >= LINE_FLOOR]

    @property
    def trusted(self) -> str:
        """The text of the trusted lines."""
        return self._text(self._trusted_lines())

    def worded(self) -> OcrPage:
        """The page without its lines that hold no token of two characters or more: what
        Tesseract makes of an icon's strokes beside lettering ("P Y"). Its ``tsv`` is still
        the whole reading's."""
        lines = [words for words in self._lines() if any(len(w.text) > 1 for w in words)]
        return OcrPage(tuple(word for words in lines for word in words), self.tsv)

    @property
    def text(self) -> str:
        """Every word read, trusted or not."""
        return self._text(self._lines())

    @property
    def doubtful(self) -> bool:
        """Words were read, but most of them (by length) on lines that are not trusted."""
        total = sum(len(w.text) for w in self.words)
        trusted = sum(len(w.text) for words in self._trusted_lines() for w in words)
        return total > 0 and trusted < TRUSTED_SHARE * total


def _joined(lines: list[str]) -> str:
    """A paragraph's lines as one line; a word hyphenated at a line end is joined."""
    text = lines[0]
    for line in lines[1:]:
        if text.endswith("-") and line[:1].islower():
            text = text[:-1] + line
        else:
            text += " " + line
    return text


def parse_tsv(tsv: str) -> OcrPage:
    """Tesseract's ``tsv`` output as words (level 5 rows with text)."""
    rows = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    words = tuple(
        Word(
            row["text"].strip(),
            float(row["conf"]),
            (int(row["block_num"]), int(row["par_num"]), int(row["line_num"])),
        )
        for row in rows
        if row.get("level") == "5" and (row.get("text") or "").strip()
    )
    return OcrPage(words, tsv)


def tessdata() -> str:
    """Tesseract's language data folder as PyMuPDF finds it (``$TESSDATA_PREFIX``, else by
    running ``tesseract --list-langs``: 14 ms, so once a process); DigestError when there is
    none."""
    return _tessdata(os.environ.get("TESSDATA_PREFIX"))


@functools.cache
def _tessdata(prefix: str | None) -> str:
    import pymupdf

    try:
        return str(pymupdf.get_tessdata(prefix))
    except RuntimeError as exc:
        raise DigestError(f"cannot find Tesseract's language data: {exc}") from exc


@functools.cache
def installed(language: str, tessdata: str) -> tuple[str, tuple[str, ...]]:
    """The languages of ``language`` (``deu+eng``) whose data ``tessdata`` holds, as one
    ``-l`` argument (English when it holds none of them), and those it lacks."""
    names = [name for name in language.split("+") if name]
    have = [n for n in names if (Path(tessdata) / f"{n}.traineddata").is_file()]
    return "+".join(have) or "eng", tuple(n for n in names if n not in have)


Layout = Literal["page", "region", "block"]
"""How Tesseract lays out an image: a ``page`` (a scan, turned upright first where the
orientation data is installed), a ``region`` of a born-digital page (a picture's lettering,
upright: no orientation detection; on the corpus's 348 drawn-text regions the same text, in
28% less time on one PDF in three and 2% less on the others), or one ``block`` of text (a
strip cut from one)."""


def _segmentation(layout: Layout, tessdata: str) -> int:
    """Tesseract's page segmentation mode for ``layout``: a page automatically, with
    orientation detection where its data is installed (a page scanned upside down or sideways
    is read turned upright: conf 26 -> 95 on such a page of the corpus, at a tenth of a second
    more a page); a region automatically; a block as one."""
    if layout == "page":
        return 1 if (Path(tessdata) / "osd.traineddata").is_file() else 3
    return {"region": 3, "block": 6}[layout]


def read_image(
    image: bytes, language: str, tessdata: str, binary: str, layout: Layout = "page"
) -> OcrPage:
    """OCR one image (PNG bytes), laid out as ``layout`` says. One thread: workers run side
    by side on the cores."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    language = installed(language, tessdata)[0]
    command = [binary, "stdin", "stdout", "--tessdata-dir", tessdata, "-l", language]
    command += ["--psm", str(_segmentation(layout, tessdata)), "tsv"]
    try:
        done = subprocess.run(command, input=image, capture_output=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise DigestError(f"Tesseract took over {TIMEOUT} s") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DigestError(f"Tesseract failed: {reason[-1] if reason else done.returncode}")
    return parse_tsv(done.stdout.decode("utf-8", "replace"))


_TSV_COLUMNS = "level page_num block_num par_num line_num word_num left top width height conf text"
_TSV_HEADER = _TSV_COLUMNS.replace(" ", "\t") + "\n"
"""The header of the command line's ``tsv``, which the library's rows come without."""
_LIBRARY_LOCK = threading.Lock()
"""One reading at a time on the process's loaded Tesseracts (an API object is not safe to
share between threads; a library user may convert in several)."""


@functools.cache
def _library(language: str, tessdata: str) -> Any | None:
    """Tesseract's library (tesserocr) with ``language`` loaded, kept for the process; None
    where tesserocr is not installed (it has no wheel for macOS)."""
    try:
        import tesserocr
    except ImportError:
        return None
    try:
        return tesserocr.PyTessBaseAPI(path=tessdata, lang=language)
    except RuntimeError as exc:
        raise DigestError(f"Tesseract cannot load {language!r} from {tessdata}: {exc}") from exc


def read_pixmap(
    pixmap: pymupdf.Pixmap, language: str, tessdata: str, binary: str, layout: Layout
) -> OcrPage:
    """OCR ``pixmap`` (grey or RGB pixels) laid out as ``layout`` says, in this process with
    Tesseract's library, loaded once a process and language: the command line costs 0.09 s to
    start (0.17 s with orientation detection) and a PNG to encode and decode, more than most
    drawn-text regions take to read (the corpus's 50: 11.6 -> 6.8 s); the corpus's 40 scanned
    pages read in 59 s instead of 75-78, the process's peak 30 MB higher. A page taking over
    :data:`TIMEOUT` seconds is given up. Without tesserocr, the command line reads
    (:func:`read_image`)."""
    language = installed(language, tessdata)[0]
    library = _library(language, tessdata)
    if library is None:
        return read_image(pixmap.tobytes("png"), language, tessdata, binary, layout)
    if pixmap.alpha or pixmap.n not in (1, 3):
        raise ValueError("Tesseract reads grey or RGB pixels without an alpha channel")
    with _LIBRARY_LOCK:
        library.SetPageSegMode(_segmentation(layout, tessdata))
        library.SetImageBytes(pixmap.samples, pixmap.width, pixmap.height, pixmap.n, pixmap.stride)
        library.SetSourceResolution(pixmap.xres)  # as the PNG the command line reads says
        try:
            if not library.Recognize(timeout=TIMEOUT * 1000):
                raise DigestError(f"Tesseract could not read the image in {TIMEOUT} s")
            tsv = library.GetTSVText(0)
        finally:
            library.Clear()
    return parse_tsv(_TSV_HEADER + tsv)


@functools.cache
def version() -> str:
    """The Tesseract that reads (:func:`read_pixmap`), as ``tesseract 5.5.4``; DigestError when
    there is none."""
    try:
        import tesserocr
    except ImportError:
        binary = shutil.which("tesseract")
        if binary is None:
            raise DigestError(
                "OCR needs Tesseract, which is not installed "
                "(Debian/Ubuntu: apt-get install tesseract-ocr; macOS: brew install tesseract)"
            ) from None
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
        return (done.stdout or done.stderr).splitlines()[0].strip()
    return str(tesserocr.tesseract_version()).splitlines()[0].strip()
