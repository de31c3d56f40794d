"""A line set in a font whose width table lies (every advance claimed wider than its glyph,
each glyph placed by its own move) reads with the spaces the page shows, where MuPDF alone
glues its words; lines whose widths are right are left as they are."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.font_widths import GLUED
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.word_spaces import page_text

SIZE = 11
PAGE_WIDTH = 612
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
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} 792] /Contents 4 0 R "
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
    """Where MuPDF alone reads a run of letters long enough to be glued words (after a wide
    glyph such as a bold "m" it may see a space itself, leaving runs too short to measure), on
    a line that ends on the page (past its edge MuPDF clips the glyphs)."""
    line = " ".join(words)
    assume(72 + pymupdf.Font(_FACES[face]).text_length(line, SIZE) < PAGE_WIDTH)
    source = lying_widths_pdf(tmp_path / "line.pdf", [line], face)
    assume(GLUED.search(pymupdf.open(source)[0].get_text().splitlines()[-1]))
    lines = page_text(pymupdf.open(source)[0]).splitlines()
    assert lines[-1].split() == words
    assert lines[0] == BODY


def _read_twice(source: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """The page's lines read twice in one conversion's reading, and how many times its
    characters were listed to measure them."""
    from bucketdigest.worker.digesters.doc_to_markdown import word_spaces

    listed = 0
    list_chars = word_spaces._READ_RAWDICT

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal listed
        listed += 1
        return list_chars(*args, **kwargs)

    monkeypatch.setattr(word_spaces, "_READ_RAWDICT", counted)
    page = pymupdf.open(source)[0]
    with word_spaces.spaced_lines(measured := set()):
        texts = [
            "\n".join(
                "".join(span["text"] for span in line["spans"])
                for block in page.get_text("dict")["blocks"]
                for line in block.get("lines", ())
            )
            for _ in range(2)
        ]
    texts.append(page_text(page, measured))
    return texts, listed


def test_a_page_whose_widths_lie_is_spaced_at_every_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, _ = _read_twice(lying_widths_pdf(tmp_path / "caption.pdf", [CAPTION]), monkeypatch)
    assert all(CAPTION in text for text in texts)


def test_a_page_of_long_true_words_is_measured_once_per_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Use \\DeclareRobustCommand and \\abovedisplayshortskip.")
    doc.save(tmp_path / "manual.pdf")

    texts, listed = _read_twice(tmp_path / "manual.pdf", monkeypatch)

    assert all("\\DeclareRobustCommand and \\abovedisplayshortskip." in t for t in texts)
    assert listed == 1


@pytest.mark.parametrize(
    "line",
    [
        "バケツの中の文書はすべて検索できるようになりました",
        "桶里的所有文件现在都可以搜索了而且很快",
    ],
)
def test_lines_of_scripts_without_word_spaces_are_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), line, fontname="china-s")
    doc.save(tmp_path / "cjk.pdf")

    texts, listed = _read_twice(tmp_path / "cjk.pdf", monkeypatch)

    assert all(line in text for text in texts)
    assert listed == 0
