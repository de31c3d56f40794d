"""document.json: blocks in reading order with their regions on the page; chunks cut from them."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pymupdf
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digesters.search_keyword import block_chunks, page_chunks
from bucketdigest.worker.document_blocks import (
    document_structure,
    page_blocks,
    text_layer_words,
    word_keys,
    words_inside,
)
from bucketdigest.worker.loop import Worker, WorkerSettings


def _table(rows: int, start: int = 0, header: bool = True) -> str:
    lines = ["| Name | Pop. | Area |", "|---|---|---|"] if header else []
    lines += [f"| Town {n} | {1000 + n} | {n * 3} km2 |" for n in range(start, start + rows)]
    return "\n".join(lines)


def test_each_markdown_block_is_a_block_of_its_kind() -> None:
    page = (
        "# Rules\n\n## Combat\n\nSwing the sword.\n\n- first item\n- second item\n\n"
        + _table(2)
        + "\n\n![](images/page-1-0.png)\n\nFigure 1: The board.\n\n```\nroll d20\n```\n"
    )
    blocks = [(b.kind, b.level, b.text) for b in page_blocks(page, 1)]
    assert blocks[:5] == [
        ("heading", 1, "Rules"),
        ("heading", 2, "Combat"),
        ("paragraph", None, "Swing the sword."),
        ("list_item", None, "first item"),
        ("list_item", None, "second item"),
    ]
    kinds = [kind for kind, _, _ in blocks]
    assert kinds[5:] == ["table", "picture", "caption", "code"]
    table, picture = page_blocks(page, 1)[5:7]
    assert table.rows is not None and [c["text"] for c in table.rows[0]] == ["Name", "Pop.", "Area"]
    assert table.rows[0][0]["header"] and not table.rows[1][0]["header"]
    assert picture.image == "images/page-1-0.png" and picture.caption == "Figure 1: The board."


def test_a_table_of_sixty_rows_is_chunked_by_rows_each_piece_with_its_header() -> None:
    chunks = page_chunks(["## Towns\n\n" + _table(60)], max_chars=600)
    assert len(chunks) > 2
    table_chunks = [c for c in chunks if "Town" in c.text]
    for chunk in table_chunks:  # the header row heads the rows of every piece
        lines = chunk.text.splitlines()
        assert lines[lines.index("Name | Pop. | Area") + 1].startswith("Town ")
    rows = [line for c in table_chunks for line in c.text.splitlines() if line.startswith("Town ")]
    assert rows == [f"Town {n} | {1000 + n} | {n * 3} km2" for n in range(60)], "each row once"
    assert all(c.headings == ("Towns",) for c in table_chunks)


def test_a_table_continued_over_a_page_break_is_one_table(tmp_path: Path) -> None:
    pages = ["Intro.\n\n" + _table(5), _table(5, start=5) + "\n\nAfter."]
    structure = document_structure("0" * 64, pages, tmp_path, None)
    tables = [b for b in structure["blocks"] if b["kind"] == "table"]
    assert len(tables) == 1
    assert [r[0]["text"] for r in tables[0]["rows"][1:]] == [f"Town {n}" for n in range(10)]
    assert [b["kind"] for b in structure["blocks"]] == ["paragraph", "table", "paragraph"]
    # a heading between them keeps them apart
    apart = ["Intro.\n\n" + _table(5), "## New part\n\n" + _table(5, start=5)]
    split = document_structure("0" * 64, apart, tmp_path, None)
    assert sum(b["kind"] == "table" for b in split["blocks"]) == 2


@given(st.text(max_size=300))
def test_any_page_text_gives_blocks_and_chunks_without_error(text: str) -> None:
    blocks = [b.as_json(n) for n, b in enumerate(page_blocks(text, 1), start=1)]
    for chunk in block_chunks(blocks):
        assert chunk.text and chunk.blocks


def test_regions_cover_the_words_of_their_blocks_on_the_page(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    source = make_pdf(tmp_path / "in" / "rules.pdf", title="Rules of the Sea", pages=3, seed=3)
    Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    (result,) = store.list(keys.OUT_PREFIX)
    with zipfile.ZipFile(io.BytesIO(store.get(result.key).data)) as archive:
        structure = json.loads(archive.read("document.json"))
        chunks = [json.loads(line) for line in archive.read("chunks.jsonl").splitlines()]

    doc = pymupdf.open(source)
    assert [p["width"] for p in structure["pages"]] == [round(p.rect.width, 2) for p in doc]
    shares = []
    for block in structure["blocks"]:
        if block["kind"] in ("picture",) or not block["text"]:
            continue
        assert block["regions"], block
        page = doc[block["page"] - 1]
        regions = [r for r in block["regions"] if r["page"] == block["page"]]
        shares.append(words_inside(word_keys(block["text"]), regions, text_layer_words(page)))
    assert min(shares) >= 0.95, sorted(shares)[:5]

    # every chunk names its blocks, and its regions are theirs
    by_id = {b["id"]: b for b in structure["blocks"]}
    for chunk in chunks:
        assert chunk["blocks"] and all(b in by_id for b in chunk["blocks"])
        assert chunk["regions"] == [r for b in chunk["blocks"] for r in by_id[b]["regions"]]


def test_a_source_whose_pages_cannot_be_read_gives_blocks_without_regions(tmp_path: Path) -> None:
    plain = make_pdf(tmp_path / "plain.pdf", title="Locked Rules", pages=1, seed=2)
    locked = tmp_path / "locked.pdf"
    with pymupdf.open(plain) as doc:
        doc.save(locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="o")
    structure = document_structure("0" * 64, ["# Locked Rules\n\nSome text."], tmp_path, locked)
    assert [b["kind"] for b in structure["blocks"]] == ["heading", "paragraph"]
    assert all(b["regions"] == [] for b in structure["blocks"])
    assert structure["pages"][0]["words"] == "none"


@given(st.text(alphabet=st.sampled_from(["a", "b", " ", "\u2028", "\u2029", "\x85", "\x0c"])))
def test_unicode_line_boundaries_inside_a_paragraph_leave_the_next_blocks_markdown_whole(
    inside: str,
) -> None:
    """markdown-it numbers lines by newlines alone: a block's Markdown is cut the same way."""
    markdown = f"# Title\n\nFirst {inside} end.\n\n## Next\n\nSecond paragraph.\n"
    blocks = page_blocks(markdown, 1)
    assert [b.markdown for b in blocks[-2:]] == ["## Next", "Second paragraph."]


def _page(path: Path, draw: list[tuple[tuple[float, float], str, float]]) -> Path:
    """A PDF page with ``draw``'s texts at their points, in this order in its content."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for point, text, size in draw:
        page.insert_text(point, text, fontsize=size)
    doc.save(path)
    return path


def test_a_formula_is_placed_on_its_own_symbols_not_on_the_same_ones_in_the_prose(
    tmp_path: Path,
) -> None:
    before = "Let the three sides of the triangle be named as the figure shows them."
    after = "Here the sides a b c are the legs and the hypotenuse of the right triangle."
    source = _page(
        tmp_path / "formula.pdf",
        [((56, 100), before, 10), ((56, 200), after, 10), ((250, 150), "a + b = c", 14)],
    )
    markdown = f"{before}\n\n$$a + b = c$$\n\n{after}\n"
    structure = document_structure("0" * 64, [markdown], tmp_path, source)
    formula, prose = structure["blocks"][1], structure["blocks"][2]
    assert formula["kind"] == "formula"
    (region,) = formula["regions"]
    assert region["x0"] > 240 and 130 < region["y0"] < 150, region
    words = text_layer_words(pymupdf.open(source)[0])
    assert words_inside(word_keys(prose["text"]), prose["regions"], words) == 1.0


def test_a_running_page_number_is_boxed_in_the_margin_not_in_a_reference(tmp_path: Path) -> None:
    body = "The rules for sieges are on page 12 of the second book, with the tables."
    source = _page(tmp_path / "numbered.pdf", [((56, 300), body, 10), ((290, 40), "12", 10)])
    (tmp_path / "pages.json").write_text(json.dumps({"running": [{"header": ["12"]}]}))
    structure = document_structure("0" * 64, [f"{body}\n"], tmp_path, source)
    number, paragraph = structure["blocks"]
    assert number["kind"] == "running"
    (region,) = number["regions"]
    assert region["y0"] < 45 and region["x0"] > 280, region
    assert paragraph["coverage"] == 1.0 and paragraph["regions"][0]["y0"] > 280
