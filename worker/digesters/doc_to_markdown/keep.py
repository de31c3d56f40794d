"""Which pages of a new revision may keep the Markdown of its predecessor: those whose
fingerprint equals a predecessor page's, converted by the same converter with the same
options; a page with images only at its own position (image names carry the page number). The
kept Markdown goes back to the form the converter gives (headers as font sizes, see
:mod:`headers`) so that headers are ranked again over the new revision."""

from __future__ import annotations

from collections.abc import Iterable

from bucketdigest.shared.archives import check_member_name
from bucketdigest.shared.errors import UnsafeArchive
from bucketdigest.shared.pagetext import image_links
from bucketdigest.shared.result import IMAGES_DIR, page_member
from bucketdigest.worker.digesters.doc_to_markdown.headers import encode_headers
from bucketdigest.worker.digesters.doc_to_markdown.options import (
    CONVERTER,
    ConverterOptions,
    KeptPage,
    PageKeeper,
    converter_version,
)
from bucketdigest.worker.digesters.doc_to_markdown.page_engines import LAYOUT
from bucketdigest.worker.digesters.doc_to_markdown.running import with_running
from bucketdigest.worker.predecessor import Predecessor

_ZIP_LINK = f"](../{IMAGES_DIR}/"
_RANGE_LINK = f"]({IMAGES_DIR}/"


def _image_names(markdown: str) -> list[str] | None:
    """The image files a page links to; None if it links to something else too."""
    names = []
    for link in image_links(markdown):
        target = link[link.index("](") + 2 : -1]
        if not target.startswith(f"{IMAGES_DIR}/"):
            return None
        names.append(target.removeprefix(f"{IMAGES_DIR}/"))
    return names


def page_keeper(predecessor: Predecessor, options: ConverterOptions) -> PageKeeper:
    """Pages (0-based) to take from ``predecessor``, given the new fingerprints."""

    def keep(fingerprints: list[str]) -> dict[int, KeptPage]:
        record = predecessor.completed("markdown")
        converter = (record.content or {}).get("converter", {}) if record else {}
        if converter != {
            "name": CONVERTER,
            "version": converter_version(),
            "options": options.as_dict(),
            "engine": converter.get("engine"),
        }:
            return {}
        kept: dict[int, KeptPage] = {}
        _, headers = predecessor.page_index
        for index, fingerprint in enumerate(fingerprints):
            number = predecessor.pages_by_fingerprint.get(fingerprint)
            page = predecessor.read(page_member(number)) if number else None
            if page is None or number is None or number > len(headers):
                continue
            text = page.decode().strip().replace(_ZIP_LINK, _RANGE_LINK)
            markdown = encode_headers(text, headers[number - 1])
            if number <= len(predecessor.running):
                markdown = with_running(markdown, predecessor.running[number - 1])
            names = _image_names(markdown)
            if names is None or (names and number != index + 1) or not _safe(names):
                continue
            images = {name: predecessor.read(f"{IMAGES_DIR}/{name}") for name in names}
            if all(data is not None for data in images.values()):
                engines = predecessor.engines
                engine = engines[number - 1] if number <= len(engines) else LAYOUT
                kept[index] = KeptPage(markdown, {k: v for k, v in images.items() if v}, engine)
        return kept

    return keep


def _safe(names: Iterable[str]) -> bool:
    """The predecessor is bucket data: an image name that is no safe file name makes the page
    be converted anew rather than kept."""
    try:
        for name in names:
            check_member_name(name)
    except UnsafeArchive:
        return False
    return True
