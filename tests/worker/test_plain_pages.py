"""Plain pages (one column of text) are converted from their text layer, as the layout model
would convert them; pages with pictures, tables or columns still go to the model."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.engine import convert
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
    model = convert(source, "pdf", tmp_path / "model", ConverterOptions())
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
