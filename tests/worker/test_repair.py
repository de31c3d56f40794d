"""Real-world damage: what other readers open is repaired, one bad page never costs the
others, and a file nobody reads is given up with every engine's reason."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.errors import PermanentDigestError
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.worker.damaged import (
    attachments_encrypted,
    bad_page_count,
    invisible_text_layer,
    page_tree_cycle,
    poisoned_page,
)


@pytest.mark.parametrize("mode", ["legacy", "layout"])
def test_a_pdf_with_a_damaged_page_tree_is_repaired_by_qpdf_and_converted(
    tmp_path: Path, mode: str
) -> None:
    source = bad_page_count(tmp_path / "damaged.pdf")
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode=mode))
    assert len(conversion.pages) == 3
    assert "Damaged Rules" in conversion.pages[0]
    assert conversion.converter["engine"] == "mupdf+qpdf"
    assert any(
        "repaired with qpdf" in p and "Invalid number of pages" in p for p in conversion.problems
    )


def test_a_page_that_breaks_the_converter_gets_its_plain_text_and_the_others_convert(
    tmp_path: Path,
) -> None:
    # legacy mode raises on this page; layout mode (OCR off, as we run it) converts it
    source = poisoned_page(tmp_path / "poster.pdf", pages=5, poisoned=2)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode="legacy"))
    assert len(conversion.pages) == 5
    for number, page in enumerate(conversion.pages, start=1):
        assert f"Page {number} about poster rules" in page
    broken = [p for p in conversion.problems if p.startswith("page ")]
    assert len(broken) == 1 and broken[0].startswith("page 2:") and "plain text" in broken[0]


def test_a_file_no_engine_can_read_names_each_engines_reason(tmp_path: Path) -> None:
    good = make_pdf(tmp_path / "good.pdf", title="Good", pages=2, seed=9).read_bytes()
    (tmp_path / "truncated.pdf").write_bytes(good[:200])
    with pytest.raises(PermanentDigestError) as raised:
        convert(tmp_path / "truncated.pdf", "pdf", tmp_path / "work", ConverterOptions())
    message = str(raised.value)
    assert message.startswith("not a readable PDF file")
    assert "MuPDF:" in message and "PDFium:" in message and str(tmp_path) not in message


def test_damaged_documents_end_done_with_their_problems_in_info_json(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    bad_page_count(folder / "tree.pdf")
    poisoned_page(folder / "poster.pdf")
    attachments_encrypted(folder / "attached.pdf", "The referee reads the sealed notes.")
    store = LocalStore(tmp_path / "bucket")
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter())])
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
    )
    assert Worker(store, settings).run().outcomes == {"done": 3}
    expected = {  # pages, a problem noted, a text found
        "tree.pdf": (3, "repaired with qpdf", "Damaged Rules"),
        "poster.pdf": (3, "page 2:", ""),
        "attached.pdf": (1, "by PDFium: MuPDF could not open it", "reads the sealed notes."),
    }
    for entry in report.files:
        with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(entry.digest)).data)) as archive:
            info = json.loads(archive.read("info.json"))
            text = archive.read("document.md").decode()
        pages, problem, found = expected[entry.path]
        assert info["pages"] == pages
        assert any(problem in noted for noted in info["problems"]), info["problems"]
        assert found in text


@pytest.mark.parametrize("mode", ["legacy", "layout"])
def test_a_text_layer_the_markdown_lost_is_used_instead(tmp_path: Path, mode: str) -> None:
    """pymupdf4llm drops invisible text (a plain page read from its text layer keeps it, so
    the layout model is asked here)."""
    source = invisible_text_layer(tmp_path / "ocred.pdf")
    options = ConverterOptions(mode=mode, plain_pages=False)
    conversion = convert(source, "pdf", tmp_path / "work", options)
    assert "Knights charge across the drawbridge" in conversion.pages[0]
    assert "Scanned Rules" in conversion.pages[0]
    assert any("text layer" in p and p.endswith(": 1") for p in conversion.problems)


def test_pages_whose_markdown_keeps_their_text_are_left_alone(tmp_path: Path) -> None:
    source = make_pdf(tmp_path / "rules.pdf", title="Rules", pages=3, seed=4)
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions(mode="layout"))
    assert not any("text layer" in p for p in conversion.problems)
    assert conversion.pages[0].startswith("#")


def test_a_page_tree_with_a_cycle_is_walked_with_the_cycle_broken(tmp_path: Path) -> None:
    source = page_tree_cycle(tmp_path / "cycle.pdf")
    conversion = convert(source, "pdf", tmp_path / "work", ConverterOptions())
    assert conversion.converter["engine"] == "mupdf+page-tree"
    assert [page.strip() for page in conversion.pages] == [
        "The first page tells how the siege began.",
        "The second page tells how the moat was crossed.",
    ]
    assert any("page tree rebuilt" in p and "cycle" in p for p in conversion.problems)


def test_poppler_is_the_last_text_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bucketdigest.worker.digesters.doc_to_markdown import repair

    source = page_tree_cycle(tmp_path / "cycle.pdf")
    monkeypatch.setattr(repair, "_mupdf_view", lambda *_: None)
    monkeypatch.setattr(repair, "pdfium_texts", lambda _, reasons: reasons.update(PDFium="no"))
    opened = repair.open_document(source, "pdf", tmp_path)
    assert opened.engine == "poppler" and opened.doc is None
    assert [t.strip() for t in opened.texts] == [
        "The first page tells how the siege began.",
        "The second page tells how the moat was crossed.",
    ]
    assert "text only, extracted by poppler" in opened.problems[0]
