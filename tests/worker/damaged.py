"""Damaged PDFs of the kinds real collections hold, made from healthy generated ones."""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from pathlib import Path

import pymupdf

from bucketdigest.shared.samples import make_pdf


def bad_page_count(path: Path) -> Path:
    """A page tree whose /Count is negative: MuPDF refuses it ("Invalid number of pages"),
    qpdf's recovery rebuilds it, PDFium reads it."""
    healthy = make_pdf(path.with_suffix(".healthy.pdf"), title="Damaged Rules", pages=3, seed=5)
    plain = path.with_suffix(".plain.pdf")
    with pymupdf.open(healthy) as doc:
        doc.save(plain, garbage=0, deflate=False, expand=255)
    data = re.sub(rb"/Count \d+", b"/Count -5", plain.read_bytes(), count=1)
    path.write_bytes(data)
    healthy.unlink()
    plain.unlink()
    return path


def poisoned_page(path: Path, pages: int = 3, poisoned: int = 2) -> Path:
    """A PDF whose page ``poisoned`` (1-based) draws an image declared 90,000 pixels square:
    pymupdf4llm raises on that page ("Overly large image"), MuPDF's plain text still reads it."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 100), f"Page {number} about poster rules and dragons", fontsize=14)
    page = doc[poisoned - 1]
    image = doc.get_new_xref()
    data = zlib.compress(b"\x00" * 1000)
    doc.update_object(
        image,
        "<< /Type /XObject /Subtype /Image /Width 90000 /Height 90000 /ColorSpace /DeviceGray "
        f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>",
    )
    doc.update_stream(image, data, compress=False)
    kind, resources = doc.xref_get_key(page.xref, "Resources")
    if kind == "xref":
        doc.xref_set_key(int(resources.split()[0]), "XObject", f"<< /Im9 {image} 0 R >>")
    else:
        doc.xref_set_key(page.xref, "Resources", f"<< /XObject << /Im9 {image} 0 R >> >>")
    contents = page.get_contents()[0]
    doc.update_stream(
        contents, doc.xref_stream(contents) + b"\nq 500 0 0 500 50 200 cm /Im9 Do Q\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def invisible_text_layer(path: Path) -> Path:
    """A page like an OCR'd scan: a visible heading, and its body only as invisible text
    (render mode 3, as OCR tools lay text over a page image), which the converter drops."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Scanned Rules", fontsize=20)
    body = "Knights charge across the drawbridge while archers guard the battlements. " * 3
    page.insert_textbox(pymupdf.Rect(72, 150, 520, 400), body, fontsize=11, render_mode=3)
    doc.save(path)
    return path


def raw_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF written object by object (object 1 the catalog), for structures no library
    writes; ``trailer`` adds entries to the trailer dictionary."""
    data = bytearray(b"%PDF-1.6\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R %s >>\n" % (len(objects) + 1, trailer)
    data += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(data)


_PASSWORD_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def _rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    i = j = 0
    out = bytearray()
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)


def _rc4_rounds(key: bytes, data: bytes) -> bytes:
    for round_ in range(20):
        data = _rc4(bytes(byte ^ round_ for byte in key), data)
    return data


def _md5_rounds(data: bytes) -> bytes:
    digest = hashlib.md5(data).digest()
    for _ in range(50):
        digest = hashlib.md5(digest[:16]).digest()
    return digest[:16]


def attachments_encrypted(path: Path, text: str) -> Path:
    """A one-page PDF whose attachment alone is encrypted (standard security handler, revision
    4: /StmF and /StrF /Identity, /EFF a crypt filter with /AuthEvent /EFOpen) under a user
    password. Its page is plain text, so pdfinfo, PDFium and viewers open it without asking;
    MuPDF asks for the password. Written by hand: qpdf and MuPDF cannot make one."""
    user, owner, permissions = b"referee", b"owner", -4
    file_id = hashlib.md5(path.name.encode()).digest()
    user, owner = (user + _PASSWORD_PAD)[:32], (owner + _PASSWORD_PAD)[:32]
    owner_entry = _rc4_rounds(_md5_rounds(owner), user)
    key = _md5_rounds(user + owner_entry + struct.pack("<i", permissions) + file_id)
    user_entry = _rc4_rounds(key, hashlib.md5(_PASSWORD_PAD + file_id).digest()) + bytes(16)
    attachment = _rc4(hashlib.md5(key + bytes([7, 0, 0, 0, 0])).digest(), b"notes for the referee")
    content = f"BT /F1 14 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R"
        b" /Names << /EmbeddedFiles << /Names [(notes.txt) 6 0 R] >> >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Filespec /F (notes.txt) /EF << /F 7 0 R >> >>",
        b"<< /Type /EmbeddedFile /Length %d >>\nstream\n%s\nendstream"
        % (len(attachment), attachment),
        b"<< /Filter /Standard /V 4 /R 4 /Length 128 /P %d /O <%s> /U <%s>"
        b" /CF << /StdCF << /CFM /V2 /AuthEvent /EFOpen /Length 16 >> >>"
        b" /StmF /Identity /StrF /Identity /EFF /StdCF >>"
        % (permissions, owner_entry.hex().encode(), user_entry.hex().encode()),
    ]
    trailer = b"/Encrypt 8 0 R /ID [<%s> <%s>]" % (file_id.hex().encode(), file_id.hex().encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw_pdf(objects, trailer))
    return path


def _text_stream(text: bytes) -> bytes:
    body = b"BT /F1 14 Tf 72 700 Td (" + text + b") Tj ET"
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(body), body)


def page_tree_cycle(path: Path) -> Path:
    """Two pages under a /Pages node that lists itself among its kids, the font and page size
    inherited from it: MuPDF fails on loading a page ("cycle in page tree"), qpdf refuses the
    loop; PDFium and poppler read it."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 2 0 R 4 0 R] /Count 2 /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 6 0 R >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 7 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        _text_stream(b"The first page tells how the siege began."),
        _text_stream(b"The second page tells how the moat was crossed."),
    ]
    path.write_bytes(raw_pdf(objects))
    return path
