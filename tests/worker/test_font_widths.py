"""A line set in a font whose width table lies (every advance claimed wider than its glyph,
each glyph placed by its own move) reads with the spaces the page shows, where MuPDF alone
glues its words; lines whose widths are right are left as they are."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import page_text

SIZE = 11
CAPTION = "Table 1: Composition of the pretraining data"
BODY = "The regular face says where its words end, as it should: Donaudampfschifffahrt."
_FACES = {"Helvetica-Bold": "hebo", "Times-Bold": "tibo"}


def _shown(text: str, face: str) -> str:
    """``text`` as a TJ array placing each glyph where its true width puts it (and a space's
    width further after a word), under a width table claiming 1000 for every glyph."""
    font = pymupdf.Font(_FACES[face])
    parts = []
    for i, char in enumerate(text):
        if char == " ":
            continue
        parts.append("(" + char.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")")
        space = text[i + 1 : i + 2] == " "
        advance = font.glyph_advance(ord(char)) + (font.glyph_advance(32) if space else 0)
        parts.append(str(round(1000 - advance * 1000)))
    return "[" + " ".join(parts) + "] TJ"


def lying_widths_pdf(path: Path, lines: list[str], face: str = "Helvetica-Bold") -> Path:
    """A page with :data:`BODY` in Helvetica (right widths) above ``lines`` in ``face`` whose
    /Widths say every glyph is 1000 wide."""
    shown = " ".join(
        f"BT /F2 {SIZE} Tf 72 {670 - 20 * n} Td {_shown(line, face)} ET"
        for n, line in enumerate(lines)
    )
    content = f"BT /F1 {SIZE} Tf 72 700 Td ({BODY}) Tj ET {shown}"
    widths = " ".join(["1000"] * 95)
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        f"<< /Type /Font /Subtype /Type1 /BaseFont /{face} /FirstChar 32 /LastChar 126 "
        f"/Widths [{widths}] /Encoding /WinAnsiEncoding >>",
    ]
    body = "".join(f"{n} 0 obj\n{o}\nendobj\n" for n, o in enumerate(objects, 1))
    raw = f"%PDF-1.4\n{body}trailer << /Root 1 0 R >>\n%%EOF\n".encode("latin-1")
    pymupdf.open("pdf", raw).save(path)  # MuPDF writes the cross-reference table
    return path


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_a_bold_caption_whose_widths_lie_keeps_its_word_spaces(tmp_path: Path, mode: str) -> None:
    source = lying_widths_pdf(tmp_path / "caption.pdf", [CAPTION])
    assert "Table1:Compositionofthepretrainingdata" in pymupdf.open(source)[0].get_text()

    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode=mode))

    text = plain_text(conversion.pages[0])
    assert CAPTION in text
    assert BODY in text  # the right face untouched, its long word whole


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(
        st.text(
            alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=4, max_size=9
        ),
        min_size=4,
        max_size=9,
    ),
    face=st.sampled_from(sorted(_FACES)),
)
def test_every_word_of_a_line_whose_widths_lie_is_read_apart(
    tmp_path: Path, words: list[str], face: str
) -> None:
    source = lying_widths_pdf(tmp_path / "line.pdf", [" ".join(words)], face)
    lines = page_text(pymupdf.open(source)[0]).splitlines()
    assert lines[-1].split() == words
    assert lines[0] == BODY
