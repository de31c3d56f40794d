"""A result's ``document.json`` as a DoclingDocument (docling-core's model), for the tools that
read docling's output: ``GET /api/documents/{hash}/docling``, ``bucketdigest get --format
docling`` and the docling-serve API. Made on request from the stored blocks, so every existing
bucket has it without reprocessing.

Each block becomes the item of its kind (a heading a section header, or the title when it is the
document's first level-1 heading; a running line a page header or footer by its place on the
page), in reading order, with its page and box as provenance; a table keeps its cell grid, a run
of list items is one list group. ``document.json`` comes from the bucket: a field of the wrong
type is left out, never trusted.
"""

from __future__ import annotations

from typing import Any

from docling_core.types.doc import (
    BoundingBox,
    CoordOrigin,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)
from docling_core.types.doc.document import ListGroup

_TEXT_LABELS = {
    "paragraph": DocItemLabel.TEXT,
    "caption": DocItemLabel.CAPTION,
    "footnote": DocItemLabel.FOOTNOTE,
}


def docling_document(structure: dict[str, Any], name: str) -> DoclingDocument:
    """The DoclingDocument of a result whose ``document.json`` is ``structure``; ``name``:
    the document's file name."""
    document = DoclingDocument(name=name.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "document")
    sizes: dict[int, tuple[float, float]] = {}
    for page in _list(structure.get("pages")):
        number, width, height = page.get("page"), page.get("width"), page.get("height")
        if isinstance(number, int) and number >= 1:
            size = Size(width=_number(width), height=_number(height))
            document.add_page(page_no=number, size=size)
            sizes[number] = (_number(width), _number(height))
    titled = False
    items: ListGroup | None = None
    for block in _list(structure.get("blocks")):
        kind, text = block.get("kind"), block.get("text")
        if not isinstance(text, str):
            continue
        prov = _provenance(block, text, sizes)
        if kind != "list_item":
            items = None
        if kind == "heading":
            level = block.get("level") if isinstance(block.get("level"), int) else 1
            if level == 1 and not titled:
                document.add_title(text=text, prov=prov)
                titled = True
            else:
                document.add_heading(text=text, level=max(1, level), prov=prov)
        elif kind == "list_item":
            items = items or document.add_list_group()
            document.add_list_item(text=text, parent=items, prov=prov)
        elif kind == "table":
            document.add_table(data=_table(block.get("rows")), prov=prov)
        elif kind == "picture":
            caption = block.get("caption")
            picture = document.add_picture(prov=prov)
            if isinstance(caption, str) and caption:
                note = document.add_text(label=DocItemLabel.CAPTION, text=caption, parent=picture)
                picture.captions.append(note.get_ref())
        elif kind == "formula":
            document.add_formula(text=text, prov=prov)
        elif kind == "code":
            document.add_code(text=text, prov=prov)
        elif kind == "running":
            document.add_text(label=_running_label(prov, sizes), text=text, prov=prov)
        else:
            document.add_text(
                label=_TEXT_LABELS.get(str(kind), DocItemLabel.TEXT), text=text, prov=prov
            )
    return document


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value >= 0 else 0.0


def _provenance(
    block: dict[str, Any], text: str, sizes: dict[int, tuple[float, float]]
) -> ProvenanceItem | None:
    """Where the block is: its first region's page and box (top-left origin, as ours), kept
    within the page (a rotated page's regions may run past its unrotated size)."""
    for region in _list(block.get("regions")):
        corners = [region.get(k) for k in ("x0", "y0", "x1", "y1")]
        page = region.get("page")
        if isinstance(page, int) and page >= 1 and all(isinstance(c, int | float) for c in corners):
            x0, y0, x1, y1 = (float(c) for c in corners)  # type: ignore[arg-type]
            width, height = sizes.get(page, (0.0, 0.0))
            if width and height:
                x0, x1 = (min(max(x, 0.0), width) for x in (x0, x1))
                y0, y1 = (min(max(y, 0.0), height) for y in (y0, y1))
            box = BoundingBox(l=x0, t=y0, r=x1, b=y1, coord_origin=CoordOrigin.TOPLEFT)
            return ProvenanceItem(page_no=page, bbox=box, charspan=(0, len(text)))
    return None


def _running_label(
    prov: ProvenanceItem | None, sizes: dict[int, tuple[float, float]]
) -> DocItemLabel:
    """A running line in the top half of its page is its header, else its footer."""
    height = sizes.get(prov.page_no, (0.0, 0.0))[1] if prov is not None else 0.0
    if prov is not None and height and prov.bbox.t > height / 2:
        return DocItemLabel.PAGE_FOOTER
    return DocItemLabel.PAGE_HEADER


def _table(rows: Any) -> TableData:
    """The cell grid: each cell at its row and column, spans kept."""
    cells: list[TableCell] = []
    taken: set[tuple[int, int]] = set()
    columns = 0
    grid = [r for r in rows if isinstance(r, list)] if isinstance(rows, list) else []
    for row_index, row in enumerate(grid):
        column = 0
        for cell in (c for c in row if isinstance(c, dict)):
            while (row_index, column) in taken:
                column += 1
            text = cell.get("text") if isinstance(cell.get("text"), str) else ""
            across = max(1, cell.get("colspan") if isinstance(cell.get("colspan"), int) else 1)
            down = max(1, cell.get("rowspan") if isinstance(cell.get("rowspan"), int) else 1)
            down = min(down, len(grid) - row_index)
            cells.append(
                TableCell(
                    text=text,
                    row_span=down,
                    col_span=across,
                    start_row_offset_idx=row_index,
                    end_row_offset_idx=row_index + down,
                    start_col_offset_idx=column,
                    end_col_offset_idx=column + across,
                    column_header=cell.get("header") is True,
                )
            )
            taken |= {(row_index + r, column + c) for r in range(down) for c in range(across)}
            column += across
            columns = max(columns, column)
    return TableData(table_cells=cells, num_rows=len(grid), num_cols=columns)
