"""Opening what other readers open. MuPDF first; for a PDF it refuses (a broken xref or
trailer, a damaged page tree, "no pages"), a copy rewritten by qpdf's recovery (pikepdf) is
tried next; a PDF neither reads, or one only PDFium opens (say, one whose attachments alone are
encrypted), gets its text from PDFium (pypdfium2). Only a file no engine reads, or one that
needs a user password, is given up, with each engine's reason.

Imported only in the digester process, like the rest of the engine.
"""

from __future__ import annotations

import contextlib
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
            return doc
    except (pymupdf.FileDataError, pymupdf.EmptyFileError, RuntimeError, ValueError) as exc:
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


def _mupdf_view(source: Path, ext: str, scratch: Path, reasons: dict[str, str]) -> Opened | None:
    """The file as MuPDF reads it, or as it reads qpdf's repaired copy; None otherwise."""
    if source.stat().st_size == 0:
        raise PermanentDigestError("the file is empty (0 bytes)")
    doc = _mupdf(source, ext, reasons, "MuPDF")
    if doc is not None:
        return Opened(doc)
    if ext != "pdf":
        raise PermanentDigestError(f"not a readable {ext.upper()} file: {reasons['MuPDF']}")
    repaired = _qpdf_repaired(source, scratch, reasons)
    if repaired is not None:
        doc = _mupdf(repaired, ext, reasons, "MuPDF after qpdf repair")
        if doc is not None:
            problem = f"repaired with qpdf before converting (MuPDF: {reasons['MuPDF']})"
            return Opened(doc, engine="mupdf+qpdf", problems=[problem])
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
    with contextlib.suppress(OSError):
        (scratch / "repaired.pdf").unlink(missing_ok=True)
    raise _give_up(reasons)
