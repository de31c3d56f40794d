"""Plain pages (one column of text) are converted from their text layer, as the layout model
would convert them; pages with pictures, tables or columns still go to the model."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

RULES = """<h1>Grappling Rules</h1>
<p>A grapple starts when the attacker <b>wins an opposed check</b> against the defender. The
defender may <i>escape</i> on a later turn by spending an action, and a creature twice the
size of the other adds two to the check.</p>
<h2>Conditions</h2>
<ul><li>The grappled creature cannot move away.</li>
<li>The grappler moves at half speed while dragging.</li></ul>
<p>When either creature is incapacitated, the grapple ends at once and both may act freely
again in the next round of combat.</p>"""

TABLE = """<p>Weapons of the watch, as the armoury issues them to every recruit on the first day
of service in the city, with the cost of a replacement.</p>
<table border="1"><tr><th>Weapon</th><th>Damage</th><th>Cost</th></tr>
<tr><td>Halberd</td><td>d10</td><td>10 gp</td></tr>
<tr><td>Crossbow</td><td>d8</td><td>25 gp</td></tr>
<tr><td>Club</td><td>d4</td><td>1 sp</td></tr></table>"""


def _html_pdf(path: Path, html: str) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_htmlbox(pymupdf.Rect(72, 72, 540, 720), html)
    doc.save(path)
    return path


def _squeezed(markdown: str) -> str:
    return re.sub(r"[ \t]+\n", "\n", markdown).strip()


def test_a_plain_page_reads_as_the_layout_model_reads_it(tmp_path: Path) -> None:
    source = _html_pdf(tmp_path / "rules.pdf", RULES)
    fast = convert(source, "pdf", tmp_path / "fast", ConverterOptions(plain_pages=True))
    model = convert(source, "pdf", tmp_path / "model", ConverterOptions(plain_pages=False))
    assert fast.engines == ("text",) and model.engines == ("layout",)
    assert _squeezed(fast.pages[0]) == _squeezed(model.pages[0])
    assert fast.pages[0].startswith("# Grappling Rules\n")
    assert "**wins an opposed check**" in fast.pages[0]
    assert "\n- The grappler moves at half speed while dragging." in fast.pages[0]


@pytest.mark.parametrize("kind", ["table", "columns", "picture"])
def test_tables_columns_and_pictures_go_to_the_layout_model(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.pdf"
    if kind == "table":
        _html_pdf(path, TABLE)
    elif kind == "columns":
        make_pdf(path, title="Two Columns", pages=1)
    else:
        _html_pdf(path, RULES)
        doc = pymupdf.open(path)
        picture = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
        picture.clear_with(200)
        doc[0].insert_image(pymupdf.Rect(400, 600, 500, 700), pixmap=picture)
        doc.saveIncr()
    conversion = convert(path, "pdf", tmp_path / "work", ConverterOptions(plain_pages=True))
    assert conversion.engines == ("layout",)


def _page_of_lines(path: Path, lines: list[tuple[float, str, str, float]]) -> Path:
    """A page with each (y, text, font, size) written at the left margin."""
    doc = pymupdf.open()
    page = doc.new_page()
    for y, text, font, size in lines:
        page.insert_text((72, y), text, fontname=font, fontsize=size)
    doc.save(path)
    return path


BODY = [
    "Every settlement keeps a ledger of the grain it stores for the winter months, and the",
    "reeve reads it aloud at the spring moot so that each household knows its share of the",
    "seed corn before the ploughing begins on the common fields beyond the old mill race.",
]


def test_a_last_paragraph_in_the_margin_stays_and_a_title_leaves_its_paragraph(
    tmp_path: Path,
) -> None:
    """The last sentence of a page standing low, close under the text, is the text's own (a
    running foot stands apart); a bold title MuPDF put in one block with the paragraph
    under it is a heading; a word broken at a line end is whole again."""
    lines = [(300.0, "3 STORES", "hebo", 10.0)]
    lines += [(313.0 + 12 * n, text, "helv", 10.0) for n, text in enumerate(BODY)]
    lines += [(349.0, "The reeve's tally is kept in the chest of the chap-", "helv", 10.0)]
    lines += [(361.0, "terhouse, under two locks.", "helv", 10.0)]
    lines += [(738.0 + 12 * n, text, "helv", 10.0) for n, text in enumerate(BODY)]
    lines += [(776.0, "The ledger is burnt once the harvest is in.", "hebo", 10.0)]
    lines += [(830.0, "Chronicle of the Marches", "helv", 8.0)]
    source = _page_of_lines(tmp_path / "stores.pdf", lines)
    page = convert(source, "pdf", tmp_path / "w", ConverterOptions(plain_pages=True))
    assert page.engines == ("text",)
    text = page.pages[0]
    assert "**The ledger is burnt once the harvest is in.**" in text
    assert text.startswith("# 3 STORES\n\nEvery settlement keeps")
    assert "the chest of the chapterhouse, under two locks." in text
    assert "Chronicle of the Marches" not in text


def test_a_chinese_page_of_text_is_read_from_its_text_layer(tmp_path: Path) -> None:
    sentence = "每个村庄都把冬天储存的粮食记在账本上春天集会时由管事当众宣读。"
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 760), sentence * 12, fontname="china-s")
    doc.save(tmp_path / "zh.pdf")
    conversion = convert(tmp_path / "zh.pdf", "pdf", tmp_path / "w", ConverterOptions())
    assert conversion.engines == ("text",)
    assert sentence * 3 in conversion.pages[0].replace("\n", "")
