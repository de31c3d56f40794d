"""Running headers, footers and page numbers leave the text a reader and a search see, and are
kept per page in pages.json."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.shared.pagetext import plain_text
from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digesters.doc_to_markdown.after_converter import finished
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.doc_to_markdown.running import split_running
from tests.worker.test_image_links import CLI

BODY = (
    "Section {n} describes how the cavalry moves across {ground} ground. A unit that charges "
    "must first pass a morale test, and a unit that fails it stays where it stands for the "
    "rest of the turn while the enemy closes in."
)
GROUNDS = ["open", "broken", "marshy", "rocky", "wooded"]


def _journal(path: Path, pages: int = 4) -> Path:
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 40), f"Journal of Tabletop Studies 12 (2024) {100 + n}", fontsize=8)
        page.insert_textbox(
            pymupdf.Rect(72, 90, 520, 400), BODY.format(n=n, ground=GROUNDS[n]), fontsize=11
        )
        page.insert_text((72, 800), "Downloaded from example.org on 3 May 2024", fontsize=8)
        page.insert_text((300, 820), str(n), fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_running_heads_and_page_numbers_leave_the_pages_and_are_kept_aside(
    tmp_path: Path, mode: str
) -> None:
    source = _journal(tmp_path / "journal.pdf")
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode=mode))
    for n, page in enumerate(conversion.pages, start=1):
        text = plain_text(page)
        assert f"Section {n} describes how the cavalry moves" in text
        assert "Journal of Tabletop" not in text and "Downloaded from" not in text
        assert not text.rstrip().endswith(f" {n}"), text
        running = conversion.running[n - 1]
        assert any("Journal of Tabletop Studies" in line for line in running.header)
        assert any("Downloaded from example.org" in line for line in running.footer)


def test_keep_headers_leaves_them_in_the_text(tmp_path: Path) -> None:
    source = _journal(tmp_path / "journal.pdf")
    options = ConverterOptions(keep_headers=True)
    conversion = convert(source, "pdf", tmp_path / "work", options)
    assert "Downloaded from example.org" in conversion.pages[0]


def test_a_line_repeated_in_the_middle_of_pages_or_a_table_row_stays() -> None:
    pages = [
        f"Title {n}\n\n{GROUNDS[n]}.\n\nThe rule of three applies here.\n\nMore on {GROUNDS[n]}."
        "\n\n|Unit|Cost|\n|---|---|"
        for n in range(4)
    ]
    bodies, running = split_running(pages)
    assert all("The rule of three applies here." in body for body in bodies)
    assert all(body.endswith("|Unit|Cost|\n|---|---|") for body in bodies)
    assert [r.header for r in running] == [[f"Title {n}"] for n in range(4)]


def test_a_framed_banner_on_every_page_is_a_running_line_and_a_framed_note_a_paragraph() -> None:
    """A form's banner and its page count each stand in a box, which the converter gives as a
    table of one cell (form_dd0293: "CUI (when filled in)" atop every page, "Page 1 of 4"):
    read as tables they were never running lines and stayed in every page's text."""
    pages = [
        f"|CUI (when filled in)|\n|---|\n\n{BODY.format(n=n, ground=GROUNDS[n])}\n\n"
        f"|Note {n}: keep the reserve behind the river|\n|---|\n\nThe river is deep.\n\n"
        f"|Unit|Cost|\n|---|---|\n|Knight|3|\n\n|Page {n} of 4|\n|---|"
        for n in range(1, 5)
    ]
    done = finished(pages, keep_headers=False, problems=[])
    for n, (page, running) in enumerate(zip(done.pages, done.running, strict=True), 1):
        assert running.header == ["CUI (when filled in)"]
        assert running.footer == [f"Page {n} of 4"]
        assert "CUI" not in page and f"Page {n}" not in page
        assert f"\n\nNote {n}: keep the reserve behind the river\n\n" in page
        assert "|Unit|Cost|\n|---|---|\n|Knight|3|" in page  # a table of more cells stays


def test_a_page_number_the_converter_made_a_heading_is_a_page_number_too() -> None:
    """Some pages' numbers come as lines, others' as headings (the layout model's call, page
    by page): a heading with no words is not a title its pages' heads repeat, and it became
    the heading path of the next page's passages ("> 7.1 The title > 24")."""
    numbers = ["1", "#### 2", "3", "#### 4"]
    pages = [
        f"## Part {n}\n\n{GROUNDS[n]}.\n\nMore on {GROUNDS[n]}.\n\n{numbers[n]}" for n in range(4)
    ]
    bodies, running = split_running(pages)
    assert [r.footer for r in running] == [[str(n + 1)] for n in range(4)]
    assert all(body.endswith(f"More on {GROUNDS[n]}.") for n, body in enumerate(bodies))


def test_the_result_zip_keeps_running_lines_in_pages_json(tmp_path: Path) -> None:
    _journal(tmp_path / "in" / "journal.pdf")
    make_pdf(tmp_path / "in" / "book.pdf", title="Heads", pages=2)
    bucket = tmp_path / "bucket"
    done = subprocess.run(
        [*CLI, "run", str(tmp_path / "in"), "--bucket", str(bucket)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found = False
    engines = []
    for result in (bucket / "store" / "out").glob("*.zip"):
        with zipfile.ZipFile(result) as archive:
            index = json.loads(archive.read("pages.json"))
            engines.append(index["engines"])
            if "Downloaded from" not in json.dumps(index):
                continue
            found = True
            assert "Downloaded from" not in archive.read("document.md").decode()
            chunks = archive.read("chunks.jsonl").decode()
            assert "cavalry" in chunks and "Downloaded from" not in chunks
            assert "Downloaded from" not in archive.read("summary.md").decode()
    assert found
    # by default, the journal's plain pages were read from their text layer, the two-column
    # book's by the layout model
    assert sorted(engines) == [["layout", "layout"], ["text"] * 4]


@pytest.mark.parametrize("mode", ["layout", "legacy"])
def test_a_chapter_head_set_large_on_every_page_is_a_running_line_of_words_only(
    tmp_path: Path, mode: str
) -> None:
    doc = pymupdf.open()
    for n in range(1, 6):
        page = doc.new_page()
        page.insert_text((72, 60), f"Chapter {n}", fontsize=18)
        page.insert_textbox(
            pymupdf.Rect(72, 90, 520, 400), BODY.format(n=n, ground=GROUNDS[n - 1]), fontsize=11
        )
    doc.save(tmp_path / "chapters.pdf")
    conversion = convert(
        tmp_path / "chapters.pdf", "pdf", tmp_path / "work", ConverterOptions(mode=mode)
    )
    heads = [line for running in conversion.running for line in running.header]
    assert heads == [f"Chapter {n}" for n in range(1, 6)], heads
