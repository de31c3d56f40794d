"""Scanned pages with an invisible text layer ("sandwich" PDFs, as libraries and office
scanners make them) read as pages of body text, not as text inside a picture."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.scanned import is_scan_with_text, word_share
from tests.documents import book_scan_pdf, printed_scan

HEAD = "400 BRITISH HUSBANDRY. [Ch. XIX."
BOOK_LINES = [
    (36, 40, 9, HEAD),
    (36, 80, 11, "any—was very trifling. Since the use of bones has, however, become"),
    (36, 94, 11, "general, the turnip crop has been, in many instances, ten-fold, and"),
    (36, 108, 11, "the farmers of the district were com-"),
    (36, 122, 11, "pelled to change the whole course of their rotation of crops."),
    (56, 150, 11, "The second paragraph opens with an indented line, as books set"),
    (36, 164, 11, "them, and runs on to a second line of the same paragraph."),
]


def _sandwich(
    path: Path, lines: list[tuple[float, float, float, str]], visible: bool = False
) -> None:
    """A one-page PDF as a scanner makes it: the page as one picture, the words laid over it
    as invisible text (``visible``: drawn on top, as a born-digital page with a background)."""
    printed = pymupdf.open()
    page = printed.new_page(width=432, height=648)
    for x, y, size, text in lines:
        page.insert_text((x, y), text, fontsize=size)
    scan = page.get_pixmap(dpi=100).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=648)
    page.insert_image(page.rect, stream=scan)
    for x, y, size, text in lines:
        page.insert_text((x, y), text, fontsize=size, render_mode=0 if visible else 3)
    doc.save(path)


def test_a_scanned_book_page_reads_as_paragraphs_with_its_running_head_apart(
    tmp_path: Path,
) -> None:
    source = tmp_path / "book.pdf"
    _sandwich(source, BOOK_LINES)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    page = conversion.pages[0]
    assert conversion.engines == ("scan",)
    assert ">" not in page, "not a block quote"
    text = plain_text(page)
    assert "Since the use of bones has, however, become general, the turnip crop" in text
    assert "the farmers of the district were compelled to change" in text
    assert "\n\nThe second paragraph opens with an indented line, as books set them," in page
    assert HEAD not in page and "BRITISH" not in text
    assert conversion.running[0].header == [HEAD]
    assert "![page 1](images/scan-0001.png)" in page
    assert (conversion.image_dir / "scan-0001.png").stat().st_size > 0


def test_a_garbage_text_layer_leaves_the_page_to_ocr_and_says_so(tmp_path: Path) -> None:
    junk = [(36, 80 + 14 * n, 11, "xq zzv Wq tHe lkj ;; ii ,, pQ z' rrk vv") for n in range(8)]
    source = tmp_path / "garbage.pdf"
    _sandwich(source, junk)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert conversion.engines == ("garbage",)
    assert plain_text(conversion.pages[0]) == "", "only the scan: page-ocr reads the page"
    assert any("reads as garbage" in problem for problem in conversion.problems)


def test_a_born_digital_page_over_a_background_picture_is_no_scan(tmp_path: Path) -> None:
    source = tmp_path / "slide.pdf"
    _sandwich(source, BOOK_LINES, visible=True)
    with pymupdf.open(source) as doc:
        assert not is_scan_with_text(doc[0])
    hidden = tmp_path / "scan.pdf"
    _sandwich(hidden, BOOK_LINES)
    with pymupdf.open(hidden) as doc:
        assert is_scan_with_text(doc[0])


def test_word_share_tells_words_from_ocr_debris() -> None:
    assert word_share("Since the use of bones has, however, become general (1851).") == 1.0
    assert word_share("xq zzv Wq tHe ;; ii pQ") < 0.5


BOOK_SCAN = [
    (36, 40, "12                    THE OLD FARM.                    [Ch. II."),
    (36, 80, "The harvest came early that year, and the whole village went out to the"),
    (36, 94, "fields before dawn. Old Martin, who had seen sixty summers, said he had"),
    (36, 108, "never known the barley so heavy nor the wheat so tall; the children car-"),
    (36, 122, "ried water to the reapers, and the dogs slept in the shade of the carts."),
    (52, 140, "By the second week the barns were full. The miller, a careful man, began"),
    (36, 154, "to grind at night so that the bakers in town would not wait for flour."),
]


@pytest.mark.parametrize("seed", range(6))
def test_a_book_scanners_word_fitted_layer_reads_as_whole_sentences(
    tmp_path: Path, seed: int
) -> None:
    """Every word its own span at its own size, baselines wobbling, each printed line laid
    down as fragments in shuffled order: the printed lines are rebuilt from the word boxes."""
    source = book_scan_pdf(tmp_path / "book.pdf", BOOK_SCAN, seed=seed)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    page = conversion.pages[0]
    assert conversion.engines == ("scan",)
    paragraphs = [p for p in page.split("\n\n") if not p.startswith("![")]
    assert paragraphs == [
        "The harvest came early that year, and the whole village went out to the fields "
        "before dawn. Old Martin, who had seen sixty summers, said he had never known the "
        "barley so heavy nor the wheat so tall; the children carried water to the reapers, "
        "and the dogs slept in the shade of the carts.",
        "By the second week the barns were full. The miller, a careful man, began to grind "
        "at night so that the bakers in town would not wait for flour.",
    ]
    assert conversion.running[0].header == ["12 THE OLD FARM. [Ch. II."]


COLUMN = [
    "There is a flag waving from it defiantly. A proud day it will",
    "be when we haul it down. The women, it seems, did not",
    "all leave the city before the bombardment began, and",
    "I suppose they have determined to brave it out. Their",
    "sacrifices and privations are worthy of a better cause,",
    "and were they but on our side how we would worship",
    "them. It is rumored in camp that reinforcements come.",
]
CAPTION = [
    "Cannister shot is a tin cylinder with",
    "iron heads, filled with balls packed",
    "with saw-dust. The heads are movable,",
    "and the edges of the tin are turned",
    "down over them to hold them in place.",
    "The balls are made of such a size",
    "that seven of them lie in a bed.",
]


def test_a_caption_set_beside_a_scanned_column_reads_apart_from_it(tmp_path: Path) -> None:
    """An old book's engraving with its caption in small type beside the text column: the
    caption's lines stand nearly level with the column's, a few points apart, and are read
    as a paragraph of their own, the column's sentences whole."""
    gutter = 36 + max(pymupdf.get_text_length(text, fontsize=7) for text in CAPTION) + 6
    lines: list[tuple[float, float, float, str]] = [
        (36, 60, 10, "I have a great curiosity to see the court house at the top of the"),
        (36, 73, 10, "hill. It stands there, and seems to be the target for many cannon."),
    ]
    lines += [(gutter, 96 + 13 * n, 10, text) for n, text in enumerate(COLUMN)]
    lines += [(36, 101 + 7 * n, 7, text) for n, text in enumerate(CAPTION)]
    source = tmp_path / "book.pdf"
    _sandwich(source, lines)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert conversion.engines == ("scan",)
    paragraphs = [p for p in conversion.pages[0].split("\n\n") if not p.startswith("![")]
    assert paragraphs == [
        f"{lines[0][3]} {lines[1][3]}",
        " ".join(CAPTION),
        " ".join(COLUMN),
    ]


def test_a_word_mupdf_strings_onto_the_line_above_is_read_in_its_own_line(
    tmp_path: Path,
) -> None:
    """A book scanner's layer sets each space as a span of its own, its size fitted to the
    gap to the next word laid down: when that word is of the next line, the space stands
    tall enough that MuPDF strings the word onto the line before it ("stretched Then"). The
    word is read in its own line."""
    printed = [
        (200, 240, "there was a light behind him. He"),
        (200, 253, "got up and stretched his neck out"),
        (200, 266, "about a minute, listening. Then he"),
        (200, 279, "says, and listened some more."),
    ]
    words = []  # each line's words, where they are printed
    for x, y, text in printed:
        words.append([])
        for word in text.split():
            words[-1].append((word, x, y))
            x += pymupdf.get_text_length(word + " ", fontname="tiro", fontsize=10)
    then_he = words[2][-2:]  # laid down after "stretched", before the rest of its line
    order = [*words[0], *words[1][:4], *then_he, *words[1][4:], *words[2][:-2], *words[3]]
    doc = printed_scan(printed, 10)
    page = doc[0]
    end: tuple[float, float] | None = None  # where the last word laid down ends
    for word, x, y in order:
        if end is not None:  # a space from there to this word, its size fitted to the gap
            size = max(x - end[0], 2) / pymupdf.get_text_length(" ", fontname="helv", fontsize=1)
            at = (end[0], (end[1] + y) / 2 + 2)
            page.insert_text(at, " ", fontname="helv", fontsize=size, render_mode=3)
        width = pymupdf.get_text_length(word, fontname="tiro", fontsize=10)
        size = width / pymupdf.get_text_length(word, fontname="helv", fontsize=1)
        page.insert_text((x, y), word, fontname="helv", fontsize=size, render_mode=3)
        end = (x + width, y)
    doc.save(tmp_path / "book.pdf")
    with pymupdf.open(tmp_path / "book.pdf") as opened:
        strung = [
            "".join(span["text"] for span in line["spans"])
            for block in opened[0].get_text("dict")["blocks"]
            for line in block.get("lines", ())
        ]
    assert any("stretched Then" in line for line in strung), "MuPDF strings it on"

    conversion = convert(tmp_path / "book.pdf", "pdf", tmp_path / "work", ConverterOptions())

    text = plain_text(conversion.pages[0])
    assert "He got up and stretched his neck out about a minute, listening. Then he says" in text


def test_a_loose_line_of_a_skewed_scan_reads_in_its_order(tmp_path: Path) -> None:
    """A justified line of a narrow column spaces its words wider than a line's height, so
    the layer gives it in pieces; on a skewed scan its right end stands higher than its
    left. The pieces are read as one line, left to right."""
    pieces = ["tween my shoulders.", "Seemed like I'd die if I couldn't scratch.", "Well, I've"]
    lines: list[tuple[float, float, float, str]] = [
        (36, 100, 10, "It got to itching; and then my ear begun to itch; and next"),
        (36, 113, 10, "my back, right in the middle of it, and then right be-"),
    ]
    x = 36.0
    for n, piece in enumerate(pieces):
        lines.append((x, 127 - 1.5 * n, 10, piece))
        x += pymupdf.get_text_length(piece, fontsize=10) + 22  # half again a line's height
    lines += [
        (36, 140, 10, "noticed that thing plenty of times since. If you are with"),
        (36, 153, 10, "the quality, or at a funeral, or trying to go to sleep."),
    ]
    source = tmp_path / "book.pdf"
    _sandwich(source, lines)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    text = plain_text(conversion.pages[0])
    assert "right between my shoulders. Seemed like I'd die if I couldn't scratch. Well, I've" in (
        text
    )


def test_a_caption_between_two_lines_of_a_paragraph_follows_the_paragraph(
    tmp_path: Path,
) -> None:
    """An engraving's caption in small type, left of the column and between two of its
    lines (too few rows for a gutter): the paragraph reads whole, the caption after it."""
    column = COLUMN[:5]
    lines: list[tuple[float, float, float, str]] = [
        (150, 100 + 13 * n, 10, text) for n, text in enumerate(column)
    ]
    lines.append((40, 100 + 13 * 2 + 6.5, 6, "THEY TIP-TOED ALONG."))
    source = tmp_path / "book.pdf"
    _sandwich(source, lines)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    paragraphs = [p for p in conversion.pages[0].split("\n\n") if not p.startswith("![")]
    assert paragraphs == [" ".join(column), "THEY TIP-TOED ALONG."]
