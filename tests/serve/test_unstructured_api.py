"""Unstructured's partition API, spoken to by its real clients: the official
``unstructured-client`` SDK with its default PDF splitting on a 30-page PDF (page batches sent
at once, reassembled with the right page numbers), and LangChain's ``UnstructuredLoader`` with
``partition_via_api=True``; a file no digester takes refused in Unstructured's error shape."""

from __future__ import annotations

from pathlib import Path

import httpx
import pymupdf
import pytest
from langchain_unstructured import UnstructuredLoader
from unstructured_client import UnstructuredClient
from unstructured_client.models import operations, shared

from bucketdigest.shared.samples import make_pdf
from tests.documents import mislayered_pdf
from tests.serve.conftest import Fleet

PAGES = 30
TOPICS = [
    "barley",
    "oats",
    "rye",
    "wheat",
    "millet",
    "spelt",
    "flax",
    "hemp",
    "hops",
    "malt",
    "bran",
    "chaff",
    "straw",
    "hay",
    "flour",
    "dough",
    "yeast",
    "salt",
    "honey",
    "wax",
    "wool",
    "hide",
    "tallow",
    "lard",
    "cheese",
    "butter",
    "cream",
    "whey",
    "curd",
    "ale",
]


def _book(path: Path) -> Path:
    """Thirty pages, each with its own heading (no two alike: a head repeated on every page
    is a running line) and paragraph; page 7 has a table."""
    document = pymupdf.open()
    for number in range(1, PAGES + 1):
        page = document.new_page()
        page.insert_text((72, 80), f"On {TOPICS[number - 1]}", fontsize=18)
        page.insert_text((72, 120), f"The ledger of page {number} tells of the mill and its wheel.")
        if number == 7:
            for row, cells in enumerate((("Grain", "Sacks"), ("Barley", "12"), ("Oats", "30"))):
                for column, text in enumerate(cells):
                    page.draw_rect(
                        pymupdf.Rect(
                            72 + 120 * column, 160 + 24 * row, 192 + 120 * column, 184 + 24 * row
                        )
                    )
                    page.insert_text((78 + 120 * column, 177 + 24 * row), text)
    document.save(path)
    return path


def test_the_sdk_splits_a_30_page_pdf_and_gets_every_page_back_in_order(fleet: Fleet) -> None:
    book = _book(fleet.folder / "ledger.pdf")
    client = UnstructuredClient(server_url=fleet.url, api_key_auth=fleet.token)
    answer = client.general.partition(
        request=operations.PartitionRequest(
            partition_parameters=shared.PartitionParameters(
                files=shared.Files(content=book.read_bytes(), file_name=book.name),
                strategy=shared.Strategy.FAST,
                coordinates=True,
                languages=["eng"],
            )
        ),
        timeout_ms=600_000,
    )
    elements = answer.elements
    assert elements
    pages = [e["metadata"]["page_number"] for e in elements]
    assert pages == sorted(pages) and set(pages) == set(range(1, PAGES + 1))
    for number in (1, 15, PAGES):
        on_page = [e for e in elements if e["metadata"]["page_number"] == number]
        assert any(f"The ledger of page {number} " in e["text"] for e in on_page), number
    titles = [e for e in elements if e["type"] == "Title"]
    assert [t["text"] for t in titles] == [f"On {topic}" for topic in TOPICS]
    narrative = next(e for e in elements if e["type"] == "NarrativeText")
    assert narrative["metadata"]["parent_id"] in {t["element_id"] for t in titles}
    assert narrative["metadata"]["filename"] == "ledger.pdf"
    box = narrative["metadata"]["coordinates"]
    assert len(box["points"]) == 4 and box["layout_width"] > 500
    (table,) = [e for e in elements if e["type"] == "Table"]
    assert table["metadata"]["page_number"] == 7
    assert "<td>Barley</td>" in table["metadata"]["text_as_html"]
    assert len({e["element_id"] for e in elements}) == len(elements)


def test_langchains_unstructured_loader_reads_through_the_api(fleet: Fleet) -> None:
    notes = fleet.folder / "notes.md"
    notes.write_text("# Mill notes\n\nThe wheel turns at dawn.\n\n- grind barley\n- store oats\n")
    loader = UnstructuredLoader(
        file_path=str(notes), partition_via_api=True, url=fleet.url, api_key=fleet.token
    )
    documents = loader.load()
    texts = [d.page_content for d in documents]
    assert "Mill notes" in texts and "The wheel turns at dawn." in texts
    assert {d.metadata["category"] for d in documents} >= {"Title", "NarrativeText", "ListItem"}
    chunking = UnstructuredLoader(
        file_path=str(notes),
        partition_via_api=True,
        url=fleet.url,
        api_key=fleet.token,
        chunking_strategy="by_title",
        max_characters=16,
        overlap=6,
        combine_under_n_chars=0,
    )
    pieces = [d.page_content for d in chunking.load()]
    assert all(len(p) <= 16 for p in pieces)
    assert pieces[:3] == ["Mill notes", "The wheel turns", "turns at dawn."], (
        "the SDK's chunking options reach the server: a long element's pieces overlap"
    )


def test_chunking_by_title_and_bad_input(fleet: Fleet) -> None:
    notes = fleet.folder / "chunks.md"
    notes.write_text("# One\n\n" + "Alpha words here. " * 10 + "\n\n# Two\n\nBeta words.\n")
    key = {"unstructured-api-key": fleet.token}
    answer = httpx.post(
        f"{fleet.url}/general/v0/general",
        files={"files": (notes.name, notes.read_bytes(), "text/markdown")},
        data={"chunking_strategy": "by_title", "max_characters": "100"},
        headers=key,
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    chunks = answer.json()
    assert {c["type"] for c in chunks} == {"CompositeElement"}
    assert all(len(c["text"]) <= 100 for c in chunks)
    assert chunks[-1]["text"].startswith("Two")
    each = httpx.post(
        f"{fleet.url}/general/v0/general",
        files={"files": (notes.name, notes.read_bytes(), "text/markdown")},
        data={"chunking_strategy": "basic", "new_after_n_chars": "0", "overlap": "20"},
        headers=key,
    )
    assert each.status_code == 200, each.text
    assert [c["text"][:5] for c in each.json()] == ["One", "Alpha", "Two", "Beta "], (
        "new_after_n_chars=0: an element a chunk; overlap only where one is split"
    )
    exe = httpx.post(
        f"{fleet.url}/general/v0/general", files={"files": ("tool.exe", b"MZ")}, headers=key
    )
    assert exe.status_code == 415 and "no digester handles .exe" in exe.json()["detail"]
    for field, value, reason in [
        ("max_characters", "0", "max_characters must be 1 or more, not 0"),
        ("max_characters", "-5", "max_characters must be 1 or more, not -5"),
        ("max_characters", "1e999", "max_characters is a whole number"),
        ("starting_page_number", "-3", "starting_page_number must be 1 or more"),
        ("overlap", "300", "overlap must be at most half of max_characters (250)"),
        ("new_after_n_chars", "-1", "new_after_n_chars must be 0 or more"),
    ]:
        refused = httpx.post(
            f"{fleet.url}/general/v0/general",
            files={"files": (notes.name, notes.read_bytes(), "text/markdown")},
            data={"chunking_strategy": "basic", field: value},
            headers=key,
        )
        assert refused.status_code == 422 and reason in refused.json()["detail"], refused.text


def test_the_ocr_only_strategy_reads_the_page_not_its_text_layer(fleet: Fleet) -> None:
    pdf = mislayered_pdf(fleet.folder / "ocr-only.pdf", "Unicorns sing at dawn by the lake.")
    key = {"unstructured-api-key": fleet.token}

    def texts(**form: str) -> str:
        answer = httpx.post(
            f"{fleet.url}/general/v0/general",
            files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
            data=form,
            headers=key,
            timeout=300,
        )
        assert answer.status_code == 200, answer.text
        return " ".join(e["text"] for e in answer.json())

    assert "Unicorns sing" in texts(strategy="fast")
    read = texts(strategy="ocr_only", languages="eng")
    assert "Dragons breathe fire" in read and "Unicorns" not in read
    unknown = httpx.post(
        f"{fleet.url}/general/v0/general",
        files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
        data={"languages": "xyz"},
        headers=key,
    )
    assert unknown.status_code == 422 and "languages" in unknown.json()["detail"]


def test_the_guides_client_examples_run_as_written(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    guide = (Path(__file__).parents[2] / "docs" / "guide.md").read_text()
    section = guide[guide.index("## Use it from tools that speak docling-serve") :]
    section = section[: section.index("\n## ", 4)]
    examples = [part.split("```", 1)[0] for part in section.split("```python")[1:]]
    assert len(examples) == 2
    folder = fleet.folder / "readme"
    make_pdf(folder / "rules.pdf", title="Readme Rules", pages=2, seed=77)
    monkeypatch.chdir(folder)
    for example in examples:
        code = example.replace("http://127.0.0.1:8000", fleet.url).replace("bdw_...", fleet.token)
        exec(compile(code, "docs/guide.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.count("Readme Rules") >= 2, printed
    assert "('Title', 1, 'Readme Rules')" in printed, printed
