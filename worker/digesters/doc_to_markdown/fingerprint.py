"""Page fingerprints: equal exactly when two PDF pages are drawn from equal content, so a new
revision of a document can take from its predecessor the work done on its unchanged pages.

A page's fingerprint is a Merkle hash over the objects the page is made of: its content
streams, resources (fonts with their ToUnicode maps and font files, images, form XObjects,
recursively), annotations and geometry, each object hashed by its source with every
reference replaced by the referenced object's hash, and each stream by its raw bytes. Object
numbers do not enter, so a page reused as-is in a re-saved or rearranged file keeps its
fingerprint; back-links to the page tree (``/Parent``, an annotation's ``/P``) are left out,
and so are other pages a page refers to (a link's destination), or pages would depend on each
other. A rendering was the alternative: it is slower
(tens of milliseconds a page against about one) and blind to what does not show, such as a
changed hidden text layer under a scan, which changes the text extracted.

Other formats (EPUB, XPS...) have no fingerprints: their pages come from reflowing, so they are
always converted whole.
"""

from __future__ import annotations

import hashlib
import re

import pymupdf

_REFERENCE = re.compile(r"(\d+) (\d+) R\b")
_BACK_LINKS = re.compile(r"/(?:Parent|P)\s+\d+\s+\d+\s+R\b")


class _ObjectHasher:
    def __init__(self, doc: pymupdf.Document) -> None:
        self.doc = doc
        self.known: dict[int, str] = {}
        self.open: set[int] = set()
        self.size = doc.xref_length()
        self.pages = {page.xref for page in doc}

    def page(self, xref: int) -> str:
        """The fingerprint of the page object ``xref`` alone."""
        self.pages.discard(xref)
        try:
            return self(xref)
        finally:
            self.pages.add(xref)

    def __call__(self, xref: int) -> str:
        if xref in self.pages:
            return "page"
        if xref in self.known:
            return self.known[xref]
        if xref in self.open or not 0 < xref < self.size:
            return "-"
        self.open.add(xref)
        source = _BACK_LINKS.sub("", self.doc.xref_object(xref, compressed=True))
        linked = _REFERENCE.sub(lambda m: self(int(m[1])), source)
        digest = hashlib.sha256(linked.encode("utf-8", "surrogatepass"))
        if self.doc.xref_is_stream(xref):
            digest.update(self.doc.xref_stream_raw(xref) or b"")
        self.open.discard(xref)
        self.known[xref] = digest.hexdigest()
        return self.known[xref]


def page_fingerprints(doc: pymupdf.Document) -> list[str] | None:
    """One fingerprint per page of a PDF; None for other formats or a page tree too damaged
    to walk."""
    if not doc.is_pdf:
        return None
    hasher = _ObjectHasher(doc)
    fingerprints = []
    try:
        for page in doc:
            digest = hashlib.sha256(hasher.page(page.xref).encode())
            digest.update(f"{tuple(page.mediabox)} {tuple(page.cropbox)} {page.rotation}".encode())
            used = [i[0] for i in page.get_images(full=True)] + [f[0] for f in page.get_fonts()]
            for xref in used:  # resources the page may inherit from the page tree
                digest.update(hasher(xref).encode())
            fingerprints.append(digest.hexdigest())
    except (RuntimeError, ValueError):
        return None
    return fingerprints
