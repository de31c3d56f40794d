"""Generated pages whose truth is known by construction, with their facts: a two-column
journal with running heads, footers and page numbers; a report with a statistics table (row
and column headers) and a table with a merged header cell; a one-column manual with a running
foot. They complement the facts read off real pages in ``facts.jsonl``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf

_LEFT = [
    "Soil moisture was sampled every morning at six stations along the river terrace.",
    "The wettest station recorded a mean of thirty-one percent over the whole season.",
    "Readings taken after heavy rain were excluded from the seasonal averages.",
]
_RIGHT = [
    "Crop yields followed the moisture gradient closely in both study years.",
    "Barley on the upper terrace gave the lowest yield of all plots examined.",
    "Irrigation in the second year narrowed the gap between the terraces.",
]
_HEAD = "Journal of Synthetic Agronomy · Vol. 7 (2025) · pp. {first}-{last}"
_FOOT = "Downloaded from agronomy.example.org on 12 March 2025"


def _journal(path: Path) -> list[dict[str, Any]]:
    doc = pymupdf.open()
    facts: list[dict[str, Any]] = []
    pages = 3
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((56, 36), _HEAD.format(first=41, last=43), fontsize=8)
        page.insert_text((520, 36), str(40 + number), fontsize=8)
        left = " ".join(f"{s} (page {number}, part {i}.)" for i, s in enumerate(_LEFT, 1))
        right = " ".join(f"{s} (page {number}, part {i}.)" for i, s in enumerate(_RIGHT, 1))
        page.insert_textbox(pymupdf.Rect(56, 70, 290, 700), left * 2, fontsize=10)
        page.insert_textbox(pymupdf.Rect(310, 70, 544, 700), right * 2, fontsize=10)
        page.insert_text((56, 800), _FOOT, fontsize=7)
        page.insert_text((290, 816), str(40 + number), fontsize=9)
        doc_name = f"generated/{path.name}"
        facts += [
            {"doc": doc_name, "page": number, "type": "absent", "text": "Synthetic Agronomy"},
            {"doc": doc_name, "page": number, "type": "absent", "text": "Downloaded from"},
            {"doc": doc_name, "page": number, "type": "present", "text": _LEFT[1]},
            {"doc": doc_name, "page": number, "type": "present", "text": _RIGHT[2]},
            {
                "doc": doc_name,
                "page": number,
                "type": "order",
                "before": _LEFT[2],
                "after": _RIGHT[0],
            },
        ]
    doc.save(path)
    return facts


_STATS = """<h2>Table 2. Yield by terrace and year</h2>
<table border="1"><tr><th>Terrace</th><th>2023 (t/ha)</th><th>2024 (t/ha)</th><th>Change</th></tr>
<tr><td>Upper</td><td>3.1</td><td>3.9</td><td>+0.8</td></tr>
<tr><td>Middle</td><td>4.4</td><td>4.6</td><td>+0.2</td></tr>
<tr><td>Lower</td><td>5.2</td><td>5.0</td><td>-0.2</td></tr></table>
<p>The upper terrace gained most once irrigation began in the second year.</p>"""

_MERGED = """<h2>Table 3. Stations</h2>
<table border="1"><tr><th rowspan="2">Station</th><th colspan="2">Moisture (%)</th></tr>
<tr><th>Spring</th><th>Autumn</th></tr>
<tr><td>North bank</td><td>27</td><td>33</td></tr>
<tr><td>South bank</td><td>22</td><td>29</td></tr></table>"""


def _report(path: Path) -> list[dict[str, Any]]:
    doc = pymupdf.open()
    css = "table {border-collapse: collapse} td, th {border: 1px solid black; padding: 4px}"
    page = doc.new_page()
    page.insert_htmlbox(pymupdf.Rect(56, 60, 540, 330), _STATS, css=css)
    page.insert_htmlbox(pymupdf.Rect(56, 360, 540, 600), _MERGED, css=css)
    doc.save(path)
    name = f"generated/{path.name}"
    table = {"doc": name, "page": 1, "type": "table"}
    return [
        {**table, "cell": "3.9", "top_heading": "2024 (t/ha)", "left_heading": "Upper"},
        {**table, "cell": "4.4", "top_heading": "2023 (t/ha)", "left_heading": "Middle"},
        {**table, "cell": "-0.2", "top_heading": "Change", "left": "5.0"},
        {**table, "cell": "33", "up": "Autumn", "left_heading": "North bank"},
        {**table, "cell": "22", "up": "27", "left_heading": "South bank"},
        {
            "doc": name,
            "page": 1,
            "type": "present",
            "text": "The upper terrace gained most once irrigation began in the second year.",
        },
    ]


_MANUAL = [
    "Before the first game, punch out the counters and sort them by colour.",
    "Each player takes the twelve counters of one colour and a reference card.",
    "The youngest player goes first; play then passes to the left.",
]


def _manual(path: Path) -> list[dict[str, Any]]:
    doc = pymupdf.open()
    facts: list[dict[str, Any]] = []
    for number in range(1, 5):
        page = doc.new_page()
        page.insert_text((72, 90), f"Chapter {number}: Setting up", fontsize=16)
        text = " ".join(f"{line} (Step {number}.{i}.)" for i, line in enumerate(_MANUAL, 1))
        page.insert_textbox(pymupdf.Rect(72, 120, 520, 500), text, fontsize=11)
        page.insert_text((72, 810), f"Rulebook v2.1 — page {number} of 4", fontsize=8)
        name = f"generated/{path.name}"
        facts += [
            {"doc": name, "page": number, "type": "absent", "text": "Rulebook v2.1"},
            {"doc": name, "page": number, "type": "present", "text": _MANUAL[number % 3]},
            {
                "doc": name,
                "page": number,
                "type": "present",
                "text": f"Chapter {number}: Setting up",
            },
        ]
    doc.save(path)
    return facts


def make(folder: Path) -> list[dict[str, Any]]:
    """Write the generated documents into ``folder``; their facts."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        *_journal(folder / "journal.pdf"),
        *_report(folder / "report.pdf"),
        *_manual(folder / "manual.pdf"),
    ]
