"""A docling-serve task: what a request to ``/v1/convert/...`` or ``/v1/chunk/...`` asks for
(its documents, the forms of the answer, the conversion and chunking options), checked as it
arrives and held whole in the task's id, so any server fronting the bucket answers for it and
nothing is kept between requests.

Options: ``to_formats``, ``image_export_mode``, ``page_range`` and ``include_images`` shape the
answer, and so does ``do_ocr`` (false: the text OCR read is left out). ``ocr_lang`` and
``force_ocr`` shape the conversion: a document is queued with them as settings of its own, and
one done without them is converted again with them (the same bytes have one result: the last
request's). The others are accepted and left aside. A chunking request's chunker and its
options are :class:`.ChunkerChoice`'s.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bucketdigest.serve.docling_chunking import CHUNKERS, ChunkerChoice, ChunkingRefused
from bucketdigest.serve.uploads import UnusableUpload
from bucketdigest.shared import keys
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.ocr_languages import UnknownLanguage, tesseract_languages
from bucketdigest.shared.records import DocumentSettings

FORMATS = {
    "md": "md_content",
    "json": "json_content",
    "html": "html_content",
    "text": "text_content",
}
"""The ``to_formats`` we make, and where each goes in the answer (``doctags`` is not made)."""
IMAGE_MODES = ("placeholder", "embedded", "referenced")
MAX_TASK_DOCUMENTS = 100
"""Documents one conversion request may hold: its task id names them all."""
ALL_PAGES_END = 1 << 31
"""A page number past any document's (the end of ``page_range`` when none is given)."""
_TASK = re.compile(r"bd1\.[A-Za-z0-9_-]{8,200000}")


@dataclass(frozen=True)
class Task:
    """What a task is about: its documents (hash and name) and how to answer."""

    digests: tuple[str, ...]
    names: tuple[str, ...]
    formats: tuple[str, ...] = ("md",)
    images: str = "placeholder"
    pages: tuple[int, int] = (1, ALL_PAGES_END)
    zipped: bool = False
    """Answered as a zip even for one document (``target_type: zip``)."""
    started: float = field(default_factory=time.time)
    ocr: bool = True
    """``do_ocr``: false leaves out the text OCR read."""
    pictures: bool = True
    """``include_images``: false answers every picture as a placeholder."""
    wanted: DocumentSettings | None = None
    """The conversion the request asked for (``ocr_lang``, ``force_ocr``)."""
    chunking: ChunkerChoice | None = None
    """A chunking task's chunker (``/v1/chunk/...``); None for a conversion."""

    @property
    def task_id(self) -> str:
        data = [
            self.digests,
            self.names,
            self.formats,
            self.images,
            self.pages,
            self.zipped,
            round(self.started, 3),
            self.ocr,
            self.pictures,
            self.wanted.chosen() if self.wanted else None,
            self.chunking.record() if self.chunking else None,
        ]
        text = json.dumps(data, separators=(",", ":")).encode()
        return "bd1." + base64.urlsafe_b64encode(text).decode().rstrip("=")

    @classmethod
    def parse(cls, task_id: str) -> Task:
        """The task ``task_id`` names; UnknownTask for one this server never gave out."""
        if not _TASK.fullmatch(task_id):
            raise UnknownTask(f"no task {task_id[:80]!r}")
        body = task_id[4:]
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            if len(fields) == 10:  # given out before chunking tasks
                fields.append(None)
            digests, names, formats, images, pages, zipped, started, ocr, pictures = fields[:9]
            wanted, chunk = fields[9:]
            return cls(
                tuple(keys.check_hash(str(d)) for d in digests),
                tuple(str(n) for n in names),
                tuple(f for f in formats if f in FORMATS),
                images if images in IMAGE_MODES else "placeholder",
                (int(pages[0]), int(pages[1])),
                zipped is True,
                float(started),
                ocr is not False,
                pictures is not False,
                DocumentSettings.from_json(json.dumps(wanted).encode()) if wanted else None,
                ChunkerChoice.recorded(chunk) if chunk is not None else None,
            )
        except (ValueError, TypeError, IndexError, binascii.Error, BucketdigestError):
            raise UnknownTask(f"no task {task_id[:80]!r}") from None


class UnknownTask(BucketdigestError):
    """A task id this server never gave out (docling-serve answers 404)."""


OPTIONS = (
    "to_formats",
    "image_export_mode",
    "page_range",
    "include_images",
    "do_ocr",
    "force_ocr",
    "ocr_lang",
)
"""The request's options we honour."""


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def asked_task(given: Mapping[str, list[Any]], target: Any) -> Task:
    """A task (its documents still to add) as the request's options ask."""
    ocr = flag(given, "do_ocr", True)
    try:
        language = tesseract_languages(str(t) for t in given.get("ocr_lang") or [])
    except UnknownLanguage as exc:
        raise UnusableUpload(f"ocr_lang: {exc}", 400) from None
    force = ocr and flag(given, "force_ocr", False)
    wanted = DocumentSettings(language, force or None) if ocr and (language or force) else None
    return Task(
        (),
        (),
        *_options(given),
        zipped=_zipped(target),
        ocr=ocr,
        pictures=flag(given, "include_images", True),
        wanted=wanted,
    )


def flag(given: Mapping[str, list[Any]], name: str, default: bool) -> bool:
    """A boolean option: JSON's true or false, or a form's ``true``/``false``."""
    values = given.get(name) or []
    if not values:
        return default
    value = values[0]
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UnusableUpload(f"{name} is true or false, not {str(value)[:40]!r}", 400)


def _options(given: Mapping[str, list[Any]]) -> tuple[tuple[str, ...], str, tuple[int, int]]:
    """``to_formats``, ``image_export_mode`` and ``page_range`` as the answer uses them."""
    formats = tuple(
        dict.fromkeys(str(f) for f in given.get("to_formats") or ["md"] if str(f) in FORMATS)
    ) or ("md",)
    modes = given.get("image_export_mode") or ["placeholder"]
    images = str(modes[0]) if str(modes[0]) in IMAGE_MODES else "placeholder"
    return formats, images, _page_range(given.get("page_range") or [])


def _whole_number(value: Any) -> int | None:
    """``value`` as a whole number: a JSON integer (not ``true``) or a form field's digits."""
    if type(value) is int:
        return value
    text = value.strip() if isinstance(value, str) else ""
    if len(text) <= 40 and text.lstrip("+-").isdecimal():  # 40: far past sys.maxsize
        return int(text)
    return None


def _page_range(bounds: list[Any]) -> tuple[int, int]:
    """``page_range``'s first and last page (numbers below 1 read as 1, beyond any document
    as :data:`ALL_PAGES_END`): two whole numbers, as JSON numbers or form fields; UnusableUpload
    (400) for anything else, or a first page after the last."""
    if not bounds:
        return 1, ALL_PAGES_END
    numbers = [_whole_number(b) for b in bounds]
    if len(numbers) != 2 or None in numbers:
        raise UnusableUpload(f"page_range is two page numbers, not {bounds!r:.80}", 400)
    first, last = (min(max(1, n), ALL_PAGES_END) for n in numbers if n is not None)
    if first > last:
        raise UnusableUpload(f"page_range starts at page {first}, after its last, {last}", 400)
    return first, last


def _zipped(target: Any) -> bool:
    """Whether a target asks for a zip; UnusableUpload for the targets we do not have (a
    presigned URL, S3: the client then falls back to the answer in the body)."""
    if target in (None, "", "inbody"):
        return False
    if target == "zip":
        return True
    raise UnusableUpload(
        f"target_type: Input should be 'inbody' or 'zip', not {str(target)[:40]!r} "
        "(presigned_url and s3 targets need artifact storage to be configured)",
        400,
    )


def chunking_task(task: Task, chunker: str, options: Mapping[str, Any], converted: Any) -> Task:
    """``task`` made a chunking task (answered in the body, as docling-serve does)."""
    if task.zipped:
        raise UnusableUpload("a chunking task is answered in the body: target inbody", 400)
    if chunker not in CHUNKERS:
        raise UnknownTask(f"no chunker {chunker[:40]!r}: the chunkers are {', '.join(CHUNKERS)}")

    def option(name: str, default: bool) -> bool:
        return flag({name: as_list(options.get(name))}, name, default)

    try:
        choice = ChunkerChoice.asked(
            chunker,
            options.get("tokenizer"),
            options.get("max_tokens"),
            merge_peers=option("merge_peers", True),
            markdown_tables=option("use_markdown_tables", False),
            raw_text=option("include_raw_text", False),
            converted_doc=flag(
                {"include_converted_doc": as_list(converted)}, "include_converted_doc", False
            ),
        )
    except ChunkingRefused as exc:
        raise UnusableUpload(f"chunking_options: {exc}", 400) from None
    return replace(task, formats=("json",), chunking=choice)


def few_enough(count: int) -> None:
    if count > MAX_TASK_DOCUMENTS:
        raise UnusableUpload(
            f"{count} documents in one request: at most {MAX_TASK_DOCUMENTS}; send them in several",
            413,
        )
