"""Following the links of a result zip's Markdown members, as a person reading it does.

A link inside a result names another member relative to the linking member (``pages/0001.md``
links ``../images/x.png``, ``document.md`` links ``images/x.png``). Links with a scheme
(``https:``, ``mailto:``) and anchors point outside the zip and are not followed.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass(frozen=True)
class BrokenLink:
    """A link in ``member`` whose ``target`` names no member of the zip."""

    member: str
    target: str


def internal_links(markdown: str) -> list[str]:
    """The targets of ``markdown``'s links that point inside the result (no scheme, no
    anchor-only link, not site-absolute). A line of raw HTML (a table kept as HTML) holds no
    Markdown links: its brackets are text."""
    prose = "\n".join(line for line in markdown.split("\n") if not line.startswith("<"))
    targets = []
    for target in _LINK.findall(prose):
        parts = urlsplit(target)
        if target and not parts.scheme and not parts.netloc and parts.path[:1] not in ("", "/"):
            targets.append(unquote(parts.path))
    return targets


def broken_links(archive: zipfile.ZipFile) -> list[BrokenLink]:
    """Every link of every Markdown member of ``archive`` that names no member."""
    names = set(archive.namelist())
    broken = []
    for member in sorted(n for n in names if n.endswith(".md")):
        markdown = archive.read(member).decode("utf-8", "replace")
        for target in internal_links(markdown):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member), target))
            if resolved not in names:
                broken.append(BrokenLink(member, target))
    return broken
