"""Opening what other readers open. MuPDF first; for a PDF it refuses (a broken xref or
trailer, a damaged page tree, "no pages"), a copy rewritten by qpdf's recovery (pikepdf) is
tried next, then a copy whose page tree we walk ourselves with its cycles broken (qpdf refuses
a loop in the page tree); a PDF none of these reads, or one only PDFium opens (say, one whose
attachments alone are encrypted), gets its text from PDFium (pypdfium2), and failing that from
poppler's ``pdftotext``. Only a file no engine reads, or one that needs a user password, is
given up, with each engine's reason.

Imported only in the digester process, like the rest of the engine.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from bucketdigest.shared.errors import PermanentDigestError


@dataclass
class Opened:
    """A document MuPDF can convert (``doc``), or only its text per page (``texts``), with
    what it took to open it."""

    doc: pymupdf.Document | None
    texts: tuple[str, ...] = ()
    engine: str = "mupdf"
    problems: list[str] = field(default_factory=list)


NEEDS_PASSWORD = "needs a password"
NO_PAGES = "no pages"


def _reason(exc: BaseException, source: Path) -> str:
    """An engine's error without our temporary path, which means nothing to users."""
    return (str(exc) or type(exc).__name__).replace(f" '{source}'", "").replace(str(source), "")


def _mupdf(path: Path, ext: str, reasons: dict[str, str], engine: str) -> pymupdf.Document | None:
    doc = None
    try:
        doc = pymupdf.open(path, filetype=ext)
        if doc.needs_pass:
            reasons[engine] = NEEDS_PASSWORD
        elif doc.page_count == 0:  # a damaged page tree raises here, not when opening
            reasons[engine] = NO_PAGES
        else:
            for _ in doc:  # a cycle in the page tree raises only when pages are loaded
                pass
            return doc
    except (
        pymupdf.FileDataError,
        pymupdf.EmptyFileError,
        pymupdf.mupdf.FzErrorBase,
        RuntimeError,
        ValueError,
    ) as exc:
        reasons[engine] = _reason(exc, path)
    if doc is not None:
        doc.close()
    return None


def _qpdf_repaired(source: Path, scratch: Path, reasons: dict[str, str]) -> Path | None:
    import pikepdf

    repaired = scratch / "repaired.pdf"
    try:
        with pikepdf.open(source, attempt_recovery=True) as pdf:
            pdf.save(repaired)
    except pikepdf.PasswordError:
        reasons["qpdf"] = NEEDS_PASSWORD
        return None
    except (pikepdf.PdfError, RuntimeError, ValueError, OSError) as exc:
        reasons["qpdf"] = _reason(exc, source)
        return None
    return repaired


_INHERITED = ("Resources", "MediaBox", "CropBox", "Rotate")
_REFERENCE = re.compile(r"(\d+) 0 R")


def _page_tree_flattened(source: Path, scratch: Path, reasons: dict[str, str]) -> Path | None:
    """A copy whose page tree is one node holding every page reachable from the root once
    (a node met again is skipped), attributes pages inherit written onto the pages. Walked
    object by object with MuPDF, which opens such a file but fails on loading its pages
    (qpdf refuses to open it at all)."""
    flattened = scratch / "flattened.pdf"
    try:
        with pymupdf.open(source, filetype="pdf") as doc:
            kind, value = doc.xref_get_key(doc.pdf_catalog(), "Pages")
            if kind != "xref":
                raise ValueError("the catalog names no page tree")
            root = int(value.split()[0])
            pages: list[int] = []
            seen: set[int] = set()

            def walk(node: int, inherited: dict[str, str]) -> None:
                if node in seen:
                    return
                seen.add(node)
                kind, kids = doc.xref_get_key(node, "Kids")
                if kind == "null":
                    for key, value in inherited.items():
                        if doc.xref_get_key(node, key)[0] == "null":
                            doc.xref_set_key(node, key, value)
                    pages.append(node)
                    return
                passed = dict(inherited)
                for key in _INHERITED:
                    kind, value = doc.xref_get_key(node, key)
                    if kind != "null":
                        passed[key] = value
                for kid in _REFERENCE.findall(kids):
                    walk(int(kid), passed)

            walk(root, {})
            if not pages:
                reasons["page tree walk"] = NO_PAGES
                return None
            doc.xref_set_key(root, "Kids", "[" + " ".join(f"{n} 0 R" for n in pages) + "]")
            doc.xref_set_key(root, "Count", str(len(pages)))
            for page in pages:
                doc.xref_set_key(page, "Parent", f"{root} 0 R")
            doc.save(flattened)
    except (pymupdf.mupdf.FzErrorBase, RuntimeError, ValueError, OSError) as exc:
        reasons["page tree walk"] = _reason(exc, source)
        return None
    return flattened


def poppler_texts(source: Path, reasons: dict[str, str]) -> tuple[str, ...] | None:
    """Every page's text by poppler's ``pdftotext``, or None (the reason in ``reasons``)."""
    binary = shutil.which("pdftotext")
    if binary is None:
        reasons["poppler"] = "pdftotext is not installed (Debian: poppler-utils)"
        return None
    done = subprocess.run(
        [binary, "-q", "-enc", "UTF-8", str(source), "-"], capture_output=True, timeout=600
    )
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 or not text.strip():
        reasons["poppler"] = f"pdftotext found no text (exit {done.returncode})"
        return None
    return tuple(text.split("\f")[:-1] if text.endswith("\f") else text.split("\f"))


def pdfium_texts(source: Path, reasons: dict[str, str] | None = None) -> tuple[str, ...] | None:
    """Every page's text by PDFium, or None (the reason in ``reasons``) if it cannot open it."""
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(source))
    except pypdfium2.PdfiumError as exc:
        if reasons is not None:
            reasons["PDFium"] = _reason(exc, source)
        return None
    try:
        texts = []
        for page in pdf:
            textpage = page.get_textpage()
            texts.append(textpage.get_text_bounded().replace("\r\n", "\n"))
            textpage.close()
            page.close()
        return tuple(texts)
    finally:
        pdf.close()


def _give_up(reasons: dict[str, str]) -> PermanentDigestError:
    """Nobody opened it: a password asked for by MuPDF or qpdf is the reason, then a page tree
    without pages. PDFium alone is not believed about passwords: it says "Incorrect password"
    of files that have none (seen on a damaged page tree)."""
    said = "; ".join(f"{engine}: {why}" for engine, why in reasons.items())
    values = set(reasons.values())
    if NEEDS_PASSWORD in values:
        return PermanentDigestError(
            f"the document is password-protected: it needs a user password to open ({said})"
        )
    if NO_PAGES in values:
        return PermanentDigestError(f"the document has no pages ({said})")
    return PermanentDigestError(f"not a readable PDF file: no engine could open it ({said})")


_REPAIRS = (
    (_qpdf_repaired, "mupdf+qpdf", "MuPDF after qpdf repair", "repaired with qpdf"),
    (
        _page_tree_flattened,
        "mupdf+page-tree",
        "MuPDF after the page tree walk",
        "page tree rebuilt",
    ),
)
"""Copies of a PDF MuPDF refuses, tried in turn: (maker, engine, reader's name, problem)."""


def _mupdf_view(source: Path, ext: str, scratch: Path, reasons: dict[str, str]) -> Opened | None:
    """The file as MuPDF reads it, or as it reads a repaired copy (:data:`_REPAIRS`); None
    otherwise."""
    if source.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    doc = _mupdf(source, ext, reasons, "MuPDF")
    if doc is not None:
        return Opened(doc)
    if ext != "pdf":
        raise PermanentDigestError(f"not a readable {ext.upper()} file: {reasons['MuPDF']}")
    for make, engine, reader, done in _REPAIRS:
        copy = make(source, scratch, reasons)
        doc = _mupdf(copy, ext, reasons, reader) if copy is not None else None
        if doc is not None:
            problem = f"{done} before converting (MuPDF: {reasons['MuPDF']})"
            return Opened(doc, engine=engine, problems=[problem])
    return None


def open_pages(source: Path, ext: str, scratch: Path) -> pymupdf.Document:
    """MuPDF's view of a document for digesters that render its pages (thumbnail, OCR): the
    file, or qpdf's repaired copy (a notebook: its rendered pages); PermanentDigestError when
    MuPDF can read neither."""
    if ext == "note":
        from bucketdigest.worker.digesters.doc_to_markdown.notebook import notebook_pdf

        return pymupdf.open(notebook_pdf(source, scratch))
    reasons: dict[str, str] = {}
    opened = _mupdf_view(source, ext, scratch, reasons)
    if opened is None or opened.doc is None:
        raise _give_up(reasons)
    return opened.doc


def open_document(source: Path, ext: str, scratch: Path) -> Opened:
    """Open ``source`` for conversion, repairing or falling back as needed; raises
    PermanentDigestError with every engine's reason when nothing works."""
    reasons: dict[str, str] = {}
    opened = _mupdf_view(source, ext, scratch, reasons)
    if opened is not None:
        return opened
    texts = pdfium_texts(source, reasons)
    if texts:
        said = "; ".join(f"{engine}: {why}" for engine, why in reasons.items())
        problem = f"text only, extracted by PDFium: MuPDF could not open it ({said})"
        return Opened(None, texts, engine="pdfium", problems=[problem])
    if texts is not None:
        reasons["PDFium"] = NO_PAGES
    if ext == "pdf" and (texts := poppler_texts(source, reasons)):
        said = "; ".join(f"{engine}: {why}" for engine, why in reasons.items())
        problem = f"text only, extracted by poppler: no other engine could open it ({said})"
        return Opened(None, texts, engine="poppler", problems=[problem])
    with contextlib.suppress(OSError):
        (scratch / "repaired.pdf").unlink(missing_ok=True)
    raise _give_up(reasons)
