"""Realistic sample rulebooks made with PyMuPDF, for the demo, the benchmarks and the tests.

Each PDF has a title, numbered section headings, body text in two columns, a bordered table
and an embedded image, so every part of the converter is exercised. The same seed always gives
the same bytes, and different seeds give different documents (different SHA-256).
"""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf

_WORDS = [
    "player",
    "turn",
    "dice",
    "card",
    "board",
    "token",
    "round",
    "score",
    "move",
    "attack",
    "defend",
    "roll",
    "draw",
    "discard",
    "hand",
    "deck",
    "phase",
    "action",
    "resource",
    "victory",
    "point",
    "hero",
    "monster",
    "quest",
    "map",
    "tile",
    "spell",
    "rule",
    "setup",
    "end",
    "must",
    "may",
    "each",
    "other",
    "first",
    "last",
    "when",
    "if",
    "then",
    "until",
    "unless",
    "during",
    "after",
    "before",
    "gains",
    "loses",
    "places",
    "chooses",
    "reveals",
    "shuffles",
    "trades",
    "builds",
    "explores",
]

_PAGE = pymupdf.paper_rect("a4")
_MARGIN = 50
_TABLE_CSS = "table {border-collapse: collapse} td, th {border: 1px solid black; padding: 3px}"


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(8, 16))
    return " ".join(words).capitalize() + "."


def _paragraphs(rng: random.Random, count: int) -> list[str]:
    return [" ".join(_sentence(rng) for _ in range(rng.randint(3, 6))) for _ in range(count)]


def _table_html(rng: random.Random) -> str:
    rows = "".join(
        f"<tr><td>{rng.choice(_WORDS).title()}</td><td>{rng.randint(1, 12)}</td>"
        f"<td>{rng.randint(0, 99)}</td></tr>"
        for _ in range(4)
    )
    return "<table><tr><th>Unit</th><th>Move</th><th>Cost</th></tr>" + rows + "</table>"


def _image(rng: random.Random) -> bytes:
    """A small PNG with a seeded colour gradient."""
    red, green, blue = (rng.randint(0, 127) for _ in range(3))
    samples = bytes(
        channel for y in range(64) for x in range(96) for channel in (red + x, green + y * 2, blue)
    )
    return pymupdf.Pixmap(pymupdf.csRGB, 96, 64, samples, False).tobytes("png")


def make_pdf(path: Path, *, title: str, pages: int = 3, seed: int = 0) -> Path:
    """Write a rulebook-like PDF of ``pages`` pages to ``path`` and return ``path``."""
    rng = random.Random(seed)
    doc = pymupdf.open()
    doc.set_metadata({"title": title, "author": "bucketdigest samples", "subject": "rulebook"})
    width = _PAGE.width - 2 * _MARGIN
    column = (width - 20) / 2
    for number in range(1, pages + 1):
        page = doc.new_page(width=_PAGE.width, height=_PAGE.height)
        top = _MARGIN
        heading = f"<h1>{title}</h1>" if number == 1 else ""
        heading += f"<h2>{number}. {rng.choice(_WORDS).title()} {rng.choice(_WORDS)}</h2>"
        page.insert_htmlbox(pymupdf.Rect(_MARGIN, top, _MARGIN + width, top + 90), heading)
        top += 95
        left, right = _paragraphs(rng, 2), _paragraphs(rng, 2)
        for x, paragraphs in ((_MARGIN, left), (_MARGIN + column + 20, right)):
            html = "".join(f"<p>{p}</p>" for p in paragraphs)
            page.insert_htmlbox(pymupdf.Rect(x, top, x + column, top + 330), html)
        top += 340
        table_rect = pymupdf.Rect(_MARGIN, top, _MARGIN + column, top + 140)
        page.insert_htmlbox(table_rect, _table_html(rng), css=_TABLE_CSS)
        image_rect = pymupdf.Rect(_MARGIN + column + 20, top, _MARGIN + width, top + 120)
        page.insert_image(image_rect, stream=_image(rng))
        footer = pymupdf.Rect(_MARGIN, _PAGE.height - 40, _MARGIN + width, _PAGE.height - 20)
        page.insert_htmlbox(footer, f"<p style='text-align:center'>Page {number}</p>")
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return path


def make_samples(folder: Path, count: int, pages: int = 3) -> list[Path]:
    """Write ``count`` distinct sample rulebooks into ``folder``."""
    return [
        make_pdf(
            folder / f"rulebook-{index:03d}.pdf", title=f"Rulebook {index}", pages=pages, seed=index
        )
        for index in range(count)
    ]
