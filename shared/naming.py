"""What a document is called wherever a person or an agent sees it.

The name a person gave leads: the file name of the path it was ingested from (a web page's:
the last part of its URL's path, or its host). A document's own title (a PDF's metadata) is
shown as such only when it says something: authoring tools fill it with placeholders
("Untitled", "Microsoft Word - draft3.doc", a file name, a hash) far more often than with the
title on the cover.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

_PLACEHOLDERS = frozenset(
    {
        "untitled",
        "untitled document",
        "no title",
        "notitle",
        "title",
        "document",
        "new document",
        "doc1",
        "document1",
        "presentation",
        "powerpoint presentation",
        "slide 1",
        "none",
        "null",
        "unknown",
        "anonymous",
        "(anonymous)",
        "example",
        "sample",
        "test",
        "default",
        "template",
    }
)
_TOOL_PREFIX = re.compile(
    r"^(microsoft (word|powerpoint|excel)|word|powerpoint|excel|pages|keynote)\s*-\s*",
    re.IGNORECASE,
)
_FILE_NAME = re.compile(
    r"\.(pdf|docx?|pptx?|xlsx?|odt|rtf|txt|md|tex|dvi|ps|eps|indd|qxd|pub|html?|xps|epub|"
    r"jpe?g|png|tiff?)$",
    re.IGNORECASE,
)
_HASH_LIKE = re.compile(r"^[\W_]*(?=[\w-]*\d)[0-9a-f_{}-]{12,}[\W_]*$|^[\w-]{20,}$", re.I)
"""Hex or GUID-like runs, or one long token with no space: an id, not a title."""


_SHOWN = str.maketrans(
    {chr(c): None for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
    | {"\u2028": " ", "\u2029": " "}
)
"""What a name or title is shown without: the controls that turn the direction of the text
after them (``invoice\u202efdp.exe`` reads as ``invoiceexe.pdf``), and line separators."""


def display_name(names: Iterable[str], digest: str) -> str:
    """The name a person gave the document: the file name of its first ingested path (a URL's
    last path part, else its host); the start of its hash when nothing names it. Shown
    without the controls that would make it read as another (:data:`_SHOWN`)."""
    return _display_name(names, digest).translate(_SHOWN)


def _display_name(names: Iterable[str], digest: str) -> str:
    for name in sorted(n for n in names if n):
        if "://" in name:
            parts = urlsplit(name)
            last = unquote(PurePosixPath(parts.path).name)
            if last or parts.netloc:
                return last or parts.netloc
            continue
        last = PurePosixPath(name.replace("\\", "/")).name
        if last:
            return last
    return digest[:12]


def own_title(metadata: dict[str, Any] | None, names: Iterable[str] = ()) -> str | None:
    """The document's own title from its metadata when it is meaningful: not empty, not a
    placeholder, an authoring tool's file name, an id, nor its own file name again."""
    title = " ".join(str((metadata or {}).get("title") or "").translate(_SHOWN).split())
    if not title or not any(c.isalpha() for c in title):
        return None
    lowered = title.lower()
    if lowered in _PLACEHOLDERS or _TOOL_PREFIX.match(title) or _FILE_NAME.search(title):
        return None
    if _HASH_LIKE.match(title):
        return None
    stems = {PurePosixPath(n).stem.lower() for n in names}
    return None if lowered in stems else title
