"""doc-to-markdown: the primary text output, one Markdown file per page plus images."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from bucketdigest.shared.errors import PermanentDigestError
from bucketdigest.shared.filetypes import FileKind, FileType
from bucketdigest.shared.result import IMAGES_DIR, PAGE_INDEX, page_member
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.predecessor import open_predecessor, page_index_json


def _decode(data: bytes) -> tuple[str, list[str]]:
    """Text files are read as UTF-8; Windows-1252 is the fallback, noted as a problem."""
    if b"\x00" in data:
        raise PermanentDigestError("not a text file: it contains NUL bytes")
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), ["not UTF-8; read as Windows-1252"]


class DocToMarkdown(Digester):
    name = "doc-to-markdown"
    label = "Markdown"
    description = (
        "Converts the file to Markdown, one file per page, with its images "
        "(pymupdf4llm for documents; text files as they are; an image as one page; "
        "an HTML page's main content by trafilatura; Office files by markitdown; "
        "notebook pages as images; a link file's URL)."
    )
    version = "1"
    outputs = ("markdown",)
    kinds = frozenset(FileKind)
    preload = ("bucketdigest.worker.digesters.doc_to_markdown.converter",)

    def size(self, source: Path, file: FileType) -> int:
        """A document's pages; a recording's ten-second stretches (recognition runs at about a
        third of real time); 1 for anything else."""
        if file.kind is FileKind.DOCUMENT:
            from bucketdigest.worker.digesters.doc_to_markdown.converter import page_count

            return page_count(source, file.ext)
        if file.kind in (FileKind.AUDIO, FileKind.VIDEO):
            from bucketdigest.worker.digesters.doc_to_markdown.speech import sound_units

            return sound_units(source)
        return 1

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        convert = {
            FileKind.DOCUMENT: self._document,
            FileKind.TEXT: self._text,
            FileKind.IMAGE: self._image,
            FileKind.WEB: self._web,
            FileKind.OFFICE: self._office,
            FileKind.NOTEBOOK: self._notebook,
            FileKind.LINK: self._link,
            FileKind.AUDIO: self._speech,
            FileKind.VIDEO: self._speech,
        }[ctx.file.kind]
        return {"markdown": convert(ctx)}

    def _text(self, ctx: DigestContext) -> Produced:
        data = ctx.source.read_bytes()
        text, problems = _decode(data)
        content = {"pages": 1, "converter": {"name": "text"}, "problems": problems}
        return Produced({page_member(1): (text.strip() + "\n").encode()}, content)

    def _web(self, ctx: DigestContext) -> Produced:
        from bucketdigest.worker.digesters.doc_to_markdown.web import html_to_markdown

        markdown, metadata = html_to_markdown(ctx.source.read_bytes())
        content = {
            "pages": 1,
            "metadata": metadata,
            "converter": {"name": "trafilatura"},
            "problems": [],
        }
        return Produced({page_member(1): markdown.encode()}, content)

    def _office(self, ctx: DigestContext) -> Produced:
        from bucketdigest.worker.digesters.doc_to_markdown.office import office_to_markdown

        pages, metadata = office_to_markdown(ctx.source, ctx.file.ext)
        files = {page_member(n): page.encode() for n, page in enumerate(pages, start=1)}
        content = {
            "pages": len(pages),
            "metadata": metadata,
            "converter": {"name": "markitdown"},
            "problems": [],
        }
        return Produced(files, content)

    def _link(self, ctx: DigestContext) -> Produced:
        """The link itself (url-crawl fetches what it points to)."""
        from bucketdigest.worker.digesters.url_crawl import link_target

        text, problems = _decode(ctx.source.read_bytes())
        url = link_target(text, ctx.file.ext)
        if url is None:
            raise PermanentDigestError(f"no URL in this .{ctx.file.ext} file")
        content = {"pages": 1, "metadata": {"url": url}, "converter": {"name": "link"}}
        content["problems"] = problems
        return Produced({page_member(1): f"<{url}>\n".encode()}, content)

    def _speech(self, ctx: DigestContext) -> Produced:
        """The transcript, a page per five minutes of sound (:mod:`.speech`)."""
        import os

        from bucketdigest.worker.digesters.doc_to_markdown.speech import transcribe

        server = ctx.settings.asr_server
        endpoint = None
        if server is not None:
            endpoint = (server.url, server.model, os.environ.get(server.api_key_env))
        pages, about = transcribe(ctx.source, endpoint, ctx.partial_for(self.name))
        files = {page_member(n): page.encode() for n, page in enumerate(pages, start=1)}
        content = {
            "pages": len(pages),
            "metadata": {"duration_seconds": about["seconds"]},
            "converter": {"name": about["recogniser"]},
            "problems": about["problems"],
        }
        return Produced(files, content)

    def _notebook(self, ctx: DigestContext) -> Produced:
        """Each page's image; its text is page-ocr's (handwriting reads poorly with
        Tesseract)."""
        from bucketdigest.worker.digesters.doc_to_markdown.notebook import render_pages

        files: dict[str, bytes] = {}
        pngs = render_pages(ctx.source)
        for number, png in enumerate(pngs, start=1):
            image = f"{IMAGES_DIR}/page-{number:04d}.png"
            files[image] = png
            files[page_member(number)] = f"![page {number}](../{image})\n".encode()
        content = {
            "pages": len(pngs),
            "converter": {"name": "supernotelib"},
            "problems": [],
        }
        return Produced(files, content)

    def _image(self, ctx: DigestContext) -> Produced:
        if ctx.source.stat().st_size == 0:
            raise PermanentDigestError("the file is empty (0 bytes)")
        image = f"{IMAGES_DIR}/original.{ctx.file.ext}"
        page = f"![image](../{image})\n"
        content = {"pages": 1, "converter": {"name": "image"}, "problems": []}
        return Produced({page_member(1): page.encode(), image: ctx.source.read_bytes()}, content)

    def _document(self, ctx: DigestContext) -> Produced:
        from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
        from bucketdigest.worker.digesters.doc_to_markdown.keep import page_keeper

        if ctx.settings.force_ocr and ctx.file.ext == "pdf":
            return self._for_ocr(ctx)
        predecessor = open_predecessor(ctx.predecessor)
        options = replace(ctx.settings.converter, ocr_language=ctx.settings.ocr_language)
        conversion = convert(
            ctx.source,
            ctx.file.ext,
            ctx.scratch,
            options,
            ctx.partial_for(self.name),
            page_keeper(predecessor, options) if predecessor else None,
        )
        files: dict[str, bytes] = {}
        for number, page in enumerate(conversion.pages, start=1):
            text = page.strip().replace(f"]({IMAGES_DIR}/", f"](../{IMAGES_DIR}/") + "\n"
            files[page_member(number)] = text.encode()
        if conversion.image_dir.is_dir():
            for image in sorted(conversion.image_dir.iterdir()):
                files[f"{IMAGES_DIR}/{image.name}"] = image.read_bytes()
        content: dict[str, Any] = {
            "pages": len(conversion.pages),
            "metadata": conversion.metadata,
            "converter": conversion.converter,
            "problems": list(conversion.problems),
            "converter_messages": conversion.messages,
            "seconds": round(conversion.seconds, 3),
        }
        if conversion.reused_pages:
            content["reused_pages"] = conversion.reused_pages
        running = [page.to_dict() for page in conversion.running]
        if conversion.fingerprints is not None or any(
            r.header or r.footer for r in conversion.running
        ):
            fingerprints = list(conversion.fingerprints or ())
            files[PAGE_INDEX] = page_index_json(
                fingerprints, list(conversion.headers), running, list(conversion.engines)
            )
        if predecessor is not None:
            kept = conversion.kept_pages
            content["from_predecessor"] = predecessor.tally(kept, len(conversion.pages) - kept)
        return Produced(files, content)

    def _for_ocr(self, ctx: DigestContext) -> Produced:
        """Each page empty, for page-ocr to read them all (``force_ocr``: a text layer not to
        be trusted is left aside)."""
        from bucketdigest.worker.digesters.doc_to_markdown.converter import page_count

        pages = page_count(ctx.source, ctx.file.ext)
        content = {
            "pages": pages,
            "converter": {"name": "none: force_ocr, every page read by page-ocr"},
            "problems": [],
        }
        return Produced({page_member(n): b"\n" for n in range(1, pages + 1)}, content)
