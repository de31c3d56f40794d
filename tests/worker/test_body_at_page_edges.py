"""Text of the page's own that stands where running lines stand stays in the page: a caption
floated to the top of a page, a footnote whose number is set small, a bibliography's last entry
at the foot; and a foot that carries its page number on its own line on one page and on a line
apart on the others is a running line on all of them (real report and manual pages did all
four wrongly), and a heading with the running head's words in another case stays."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions

PARAGRAPH = (
    "The survey covered {what} in every district of the county, and the figures below were "
    "checked twice against the ledgers kept by the parish clerks before they were printed."
)
FOOT = "Field Survey Handbook (Version 2.1)"


def _report(path: Path) -> Path:
    doc = pymupdf.open()
    for number, what in enumerate(["farms", "mills", "bridges", "schools"], start=1):
        page = doc.new_page()
        page.insert_text((72, 40), "SURVEY OF THE COUNTY", fontsize=8)
        top = 90
        if number == 2:  # a table floated to the top of the page, its caption over it
            page.insert_text((230, 80), "Table 2. Yearly dividends", fontsize=9)
            for row, (year, share) in enumerate([("1880", "2.50"), ("1881", "12.1")]):
                page.insert_text((240, 100 + 14 * row), year, fontsize=10)
                page.insert_text((320, 100 + 14 * row), share, fontsize=10)
            top = 160
        page.insert_textbox(
            pymupdf.Rect(72, top, 520, top + 200), PARAGRAPH.format(what=what), fontsize=11
        )
        if number == 3:  # a bibliography running to the foot of the page
            for entry in range(1, 12):
                y = 380 + 36 * entry
                page.insert_text((72, y), f"[{entry}] A. Clerk. Parish ledger {entry},", fontsize=9)
                page.insert_text((72, y + 11), "county archive, shelf mark B.", fontsize=9)
        if number == 4:  # a heading with the running head's words, in another case
            page.insert_text((72, 330), "Survey of the County", fontsize=16, fontname="hebo")
            inns = "Inns were counted by the ostlers, who kept no ledgers of their own at all."
            page.insert_textbox(pymupdf.Rect(72, 345, 520, 445), inns)
        if number == 4:  # a footnote whose number is set small and raised
            page.insert_text((72, 748), "7", fontsize=6)
            page.insert_text((76, 752), "Counted again in the spring of 1882.", fontsize=9)
        if number == 1:  # the page number on the foot's own line
            page.insert_text((72, 800), f"{FOOT}     1", fontsize=8)
        else:
            page.insert_text((72, 800), FOOT, fontsize=8)
            page.insert_text((500, 800), str(number), fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_text_of_the_page_at_its_edges_stays_and_the_foot_goes_from_every_page(
    tmp_path: Path, mode: str
) -> None:
    conversion = convert(
        _report(tmp_path / "report.pdf"), "pdf", tmp_path / "work", ConverterOptions(mode=mode)
    )
    texts = [plain_text(page) for page in conversion.pages]
    assert "Table 2. Yearly dividends" in texts[1]
    assert "[11] A. Clerk. Parish ledger 11" in texts[2]
    assert "Counted again in the spring of 1882." in texts[3]
    assert "Survey of the County" in texts[3]
    for number, (text, running) in enumerate(zip(texts, conversion.running, strict=True)):
        assert FOOT not in text, (number, text)
        assert any(FOOT in line for line in running.footer), (number, running)
        assert not any("Table 2" in line or "Clerk" in line for line in running.header)
        assert not any("Clerk" in line or "spring" in line for line in running.footer)
