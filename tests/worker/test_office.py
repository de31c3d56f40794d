"""Office documents: Word, PowerPoint (a page per slide) and Excel become Markdown; a
truncated file fails with the reason."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import openpyxl
from pptx import Presentation

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys, queue
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.result import page_member
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_DOCX = {
    "[Content_Types].xml": (
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-'
        'package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.wordprocessingml.document.main+xml"/></Types>'
    ),
    "_rels/.rels": (
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
        '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
        "</Relationships>"
    ),
    "word/document.xml": (
        f'<?xml version="1.0"?><w:document {_W}><w:body>'
        "<w:p><w:r><w:t>House rules for the winter campaign</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>Potions heal two dice of damage and cost a full action.</w:t></w:r></w:p>"
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>Price</w:t></w:r></w:p></w:tc></w:tr>"
        "<w:tr><w:tc><w:p><w:r><w:t>Rope</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>1 gp</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        "</w:body></w:document>"
    ),
}


def _write_office_files(folder: Path) -> None:
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "house-rules.docx", "w") as docx:
        for name, text in _DOCX.items():
            docx.writestr(name, text)
    deck = Presentation()
    for title in ("Session zero", "Safety tools"):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = f"Talk about {title.lower()} before play."
    deck.save(folder / "welcome.pptx")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    for row in (("Item", "Price"), ("Lantern", 5), ("Torch", 1)):
        sheet.append(row)
    book.save(folder / "prices.xlsx")
    (folder / "broken.docx").write_bytes((folder / "house-rules.docx").read_bytes()[:200])


def test_office_files_become_markdown_and_a_truncated_one_fails_with_the_reason(
    tmp_path: Path,
) -> None:
    _write_office_files(tmp_path / "in")
    store = LocalStore(tmp_path / "bucket")
    office = FileFilter(exts=EXTENSION_GROUPS["office"])
    report = Ingestor(store).ingest([FolderSource(tmp_path / "in", office)])
    digests = {f.path: f.digest for f in report.files}
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    assert Worker(store, settings).run().outcomes == {"done": 3, "failed": 1}

    def pages(name: str) -> list[str]:
        archive = zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digests[name])).data))
        names = sorted(n for n in archive.namelist() if n.startswith(page_member(1)[:6]))
        return [archive.read(n).decode() for n in names]

    (word,) = pages("house-rules.docx")
    assert "Potions heal two dice" in word and "| Rope | 1 gp |" in word
    slides = pages("welcome.pptx")
    assert len(slides) == 2 and "Safety tools" in slides[1]
    (sheet,) = pages("prices.xlsx")
    assert "## Prices" in sheet and "| Lantern | 5 |" in sheet
    failure = queue.read_failure(store, digests["broken.docx"])
    assert failure is not None and failure.error.startswith("not a readable .docx file")
