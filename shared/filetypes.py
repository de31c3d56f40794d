"""The file types bucketdigest digests, decided from the stored extension alone, never from
what a digester made of the file.

Each type has a fixed set of digesters that apply, so a user knows which outputs to expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FileKind(StrEnum):
    DOCUMENT = "document"
    """Paged documents PyMuPDF opens: PDF, e-books, XPS, comic book archives."""
    TEXT = "text"
    """Plain text and Markdown."""
    IMAGE = "image"
    """Raster images: one page to OCR and thumbnail."""
    WEB = "web"
    """HTML pages: their main content, as Markdown."""
    OFFICE = "office"
    """Word, PowerPoint and Excel files."""
    NOTEBOOK = "notebook"
    """Handwritten notebooks (Supernote): pages rendered, then OCR'd."""
    LINK = "link"
    """Internet shortcuts (.url, .webloc): the page they point to is fetched."""
    AUDIO = "audio"
    """Sound files: their speech, transcribed with timestamps."""
    VIDEO = "video"
    """Video files: the speech of their sound track."""


_MIME_BY_EXT: dict[str, tuple[FileKind, str]] = {
    "pdf": (FileKind.DOCUMENT, "application/pdf"),
    "epub": (FileKind.DOCUMENT, "application/epub+zip"),
    "mobi": (FileKind.DOCUMENT, "application/x-mobipocket-ebook"),
    "fb2": (FileKind.DOCUMENT, "application/x-fictionbook+xml"),
    "xps": (FileKind.DOCUMENT, "application/vnd.ms-xpsdocument"),
    "oxps": (FileKind.DOCUMENT, "application/oxps"),
    "cbz": (FileKind.DOCUMENT, "application/vnd.comicbook+zip"),
    "md": (FileKind.TEXT, "text/markdown"),
    "markdown": (FileKind.TEXT, "text/markdown"),
    "txt": (FileKind.TEXT, "text/plain"),
    "html": (FileKind.WEB, "text/html"),
    "htm": (FileKind.WEB, "text/html"),
    "xhtml": (FileKind.WEB, "application/xhtml+xml"),
    "docx": (
        FileKind.OFFICE,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    "pptx": (
        FileKind.OFFICE,
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    "xlsx": (FileKind.OFFICE, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "note": (FileKind.NOTEBOOK, "application/x-supernote-note"),
    "url": (FileKind.LINK, "application/internet-shortcut"),
    "webloc": (FileKind.LINK, "application/x-apple-webloc"),
    "png": (FileKind.IMAGE, "image/png"),
    "jpg": (FileKind.IMAGE, "image/jpeg"),
    "jpeg": (FileKind.IMAGE, "image/jpeg"),
    "tif": (FileKind.IMAGE, "image/tiff"),
    "tiff": (FileKind.IMAGE, "image/tiff"),
    "wav": (FileKind.AUDIO, "audio/wav"),
    "mp3": (FileKind.AUDIO, "audio/mpeg"),
    "m4a": (FileKind.AUDIO, "audio/mp4"),
    "ogg": (FileKind.AUDIO, "audio/ogg"),
    "oga": (FileKind.AUDIO, "audio/ogg"),
    "opus": (FileKind.AUDIO, "audio/opus"),
    "flac": (FileKind.AUDIO, "audio/flac"),
    "mp4": (FileKind.VIDEO, "video/mp4"),
    "m4v": (FileKind.VIDEO, "video/mp4"),
    "mkv": (FileKind.VIDEO, "video/x-matroska"),
    "webm": (FileKind.VIDEO, "video/webm"),
    "mov": (FileKind.VIDEO, "video/quicktime"),
}

EXTENSION_GROUPS: dict[str, frozenset[str]] = {
    group: frozenset(ext for ext, (kind, _) in _MIME_BY_EXT.items() if kind is kind_)
    for group, kind_ in (
        ("documents", FileKind.DOCUMENT),
        ("text", FileKind.TEXT),
        ("images", FileKind.IMAGE),
        ("web", FileKind.WEB),
        ("office", FileKind.OFFICE),
        ("notebooks", FileKind.NOTEBOOK),
        ("links", FileKind.LINK),
        ("audio", FileKind.AUDIO),
        ("video", FileKind.VIDEO),
    )
}
"""Names ``bucketdigest ingest --ext`` accepts for a whole family of extensions."""
EXTENSION_GROUPS["all"] = frozenset(_MIME_BY_EXT)

SUPPORTED_EXTENSIONS = frozenset(_MIME_BY_EXT)


def ext_of_mime(content_type: str) -> str | None:
    """The extension files of MIME type ``content_type`` are stored under (``text/html`` →
    ``html``); None for a type bucketdigest does not take."""
    return next((ext for ext, (_, mime) in _MIME_BY_EXT.items() if mime == content_type), None)


@dataclass(frozen=True)
class FileType:
    """What a digester's ``applies_to`` looks at."""

    ext: str
    kind: FileKind
    mime: str

    def __str__(self) -> str:
        return f"{self.kind.value} ({self.mime})"


class UnsupportedFileType(ValueError):
    """No digester handles this extension."""


def file_type(ext: str) -> FileType:
    """The type of a file stored with extension ``ext``; UnsupportedFileType if unknown."""
    clean = ext.lower().lstrip(".")
    try:
        kind, mime = _MIME_BY_EXT[clean]
    except KeyError:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise UnsupportedFileType(
            f"no digester handles .{clean} files (supported: {supported})"
        ) from None
    return FileType(clean, kind, mime)


def expand_extensions(names: list[str]) -> frozenset[str]:
    """Extensions and group names (``documents``, ``text``, ``images``, ``web``, ``office``,
    ``notebooks``, ``links``, ``all``) → extensions.
    UnsupportedFileType for an extension no digester handles."""
    result: set[str] = set()
    for name in names:
        clean = name.strip().lower().lstrip(".")
        if not clean:
            continue
        if clean in EXTENSION_GROUPS:
            result |= EXTENSION_GROUPS[clean]
        else:
            result.add(file_type(clean).ext)
    return frozenset(result)
