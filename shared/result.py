"""The result zip (``store/out/<hash>.zip``): the name of every member, in one place, and one
reader of a zip for everything that reads results (search, serve, monitor, a next revision).

```
document.md          the whole Markdown (image links: images/NAME)
pages/0001.md        each page's Markdown (image links: ../images/NAME)
ocr/0001.md          the OCR text of pages that have one
ocr/0001.tsv         its words with boxes (and .rapidocr.tsv, .doubtful.txt: OcrAside)
web/0001.md          the page a link file on that page points to (web/0001.html as fetched)
images/NAME          the images the Markdown shows
pages.json           per page: fingerprint, headers, running heads taken out, engine
chunks.jsonl         search chunks (page, part, heading path, text)
embeddings.npy       one vector per chunk, in chunks.jsonl order (embeddings.json says how)
windows.npy          one vector per window of a chunk the model reads whole (embeddings.json:
                     each window's chunk and characters)
tags.json            keywords with scores
summary.md           the extractive summary
thumbnail.png        the first page, small
info.json            what the document is (names, pages, metadata, problems, processing)
digests.json         every output's record (status, attempts, artifacts)
```
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

DOCUMENT = "document.md"
DOCUMENT_STRUCTURE = "document.json"
"""The document as blocks with their page regions (``worker/document_blocks.py``; its schema
``shared/document.schema.json``)."""
INFO = "info.json"
DIGESTS = "digests.json"
PAGE_INDEX = "pages.json"
CHUNKS = "chunks.jsonl"
EMBEDDINGS = "embeddings.npy"
EMBEDDINGS_INFO = "embeddings.json"
WINDOW_VECTORS = "windows.npy"
TAGS = "tags.json"
SUMMARY = "summary.md"
THUMBNAIL = "thumbnail.png"
PAGES_DIR = "pages"
OCR_DIR = "ocr"
WEB_DIR = "web"
IMAGES_DIR = "images"


ZIP_DAMAGE: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,  # an unknown compression method: a garbled header
    UnicodeDecodeError,
    json.JSONDecodeError,
)
"""What reading a damaged zip raises (truncated, garbled, a member's bytes changed)."""


def damage(source: bytes | Path) -> str | None:
    """Why a result zip cannot be used, None when it is sound: it must open, every member
    must match its checksum, and its records must parse. Reads every member once."""
    try:
        with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as zipped:
            broken = zipped.testzip()
            if broken is not None:
                return f"{broken} fails its checksum"
            for record in (INFO, DIGESTS):
                if record in zipped.namelist():
                    json.loads(zipped.read(record))
    except ZIP_DAMAGE as exc:
        return str(exc) or type(exc).__name__
    return None


def page_member(number: int) -> str:
    """``pages/0001.md`` for page 1."""
    return f"{PAGES_DIR}/{number:04d}.md"


def web_member(number: int) -> str:
    """``web/0001.md``: the Markdown of the page a link file on page 1 points to."""
    return f"{WEB_DIR}/{number:04d}.md"


def ocr_member(number: int) -> str:
    """``ocr/0001.md``: the OCR text of page 1."""
    return f"{OCR_DIR}/{number:04d}.md"


class OcrAside:
    """What OCR keeps of a page besides its text, by how the member's name ends."""

    WORDS = ".tsv"
    """``ocr/0001.tsv``: Tesseract's words with their boxes and confidence."""
    SECOND_READER = ".rapidocr.tsv"
    """``ocr/0001.rapidocr.tsv``: PP-OCR's lines, when its reading was the one kept."""
    DOUBTFUL = ".doubtful.txt"
    """``ocr/0001.doubtful.txt``: a reading too unsure to be searched."""
    ALL = (WORDS, SECOND_READER, DOUBTFUL)


def ocr_aside_member(number: int, kind: str) -> str:
    """``ocr/0001.tsv`` and the like: what OCR keeps of page 1 besides its text."""
    return f"{OCR_DIR}/{number:04d}{kind}"


def web_page_member(number: int) -> str:
    """``web/0001.html``: the page a link file on page 1 points to, as it was fetched."""
    return f"{WEB_DIR}/{number:04d}.html"


def page_number(member: str) -> int:
    """``pages/0012.md`` → 12."""
    return int(Path(member).stem)


def is_page(member: str) -> bool:
    """Whether ``member`` is a page's Markdown (``pages/NNNN.md``)."""
    return member.startswith(f"{PAGES_DIR}/") and member.endswith(".md")


def merged_page(markdown: str, extra: str) -> str:
    """A page as ``document.md`` has it: its Markdown (``pages/NNNN.md``) with image links
    relative to the zip's root, then ``extra``: its OCR text, a linked page's text."""
    text = markdown.strip().replace(f"](../{IMAGES_DIR}/", f"]({IMAGES_DIR}/")
    return f"{text}\n\n{extra.strip()}".strip()


class ResultZip:
    """A result zip, opened from its bytes or a file; members are read on demand."""

    def __init__(self, source: bytes | Path | zipfile.ZipFile) -> None:
        if isinstance(source, zipfile.ZipFile):
            self.archive = source
        else:
            self.archive = zipfile.ZipFile(
                io.BytesIO(source) if isinstance(source, bytes) else source
            )
        self._names = set(self.archive.namelist())

    def __enter__(self) -> ResultZip:
        return self

    def __exit__(self, *_: object) -> None:
        self.archive.close()

    def names(self) -> list[str]:
        return self.archive.namelist()

    def has(self, member: str) -> bool:
        return member in self._names

    def read(self, member: str) -> bytes | None:
        """The member's bytes, None when the zip has no such member."""
        return self.archive.read(member) if member in self._names else None

    def text(self, member: str, default: str = "") -> str:
        data = self.read(member)
        return default if data is None else data.decode("utf-8", "replace")

    def json(self, member: str, default: Any = None) -> Any:
        data = self.read(member)
        return default if data is None else json.loads(data)

    def info(self) -> dict[str, Any]:
        return self.json(INFO, {})

    def pages(self) -> list[str]:
        """The page members, in page order."""
        return sorted(name for name in self._names if is_page(name))
