"""The first run a newcomer makes: ``scripts/demo.sh`` converts the real documents the
repository ships (their licences beside them), answers a question from one of them and says
where the answer stands on its page."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "scripts" / "demo-documents"


def test_every_shipped_document_has_its_source_and_licence_named() -> None:
    notice = (SHIPPED / "README.md").read_text()
    shipped = sorted(p.name for p in (SHIPPED / "pdfs").iterdir())
    assert len(shipped) == 5
    for name in shipped:
        row = next((line for line in notice.splitlines() if f"`{name}`" in line), "")
        assert re.search(r"Licen[cs]e|GFDL|LPPL|MPL", row), f"{name} has no licence in README.md"


@pytest.mark.slow
def test_the_demo_converts_real_documents_and_answers_from_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BUCKETDIGEST_WORKERS"}
    demo = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        env={**env, "DEMO_DIR": str(tmp_path / "demo")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    out = demo.stdout + demo.stderr
    assert "done: 5 documents" in out
    assert "# The LinnSequencer" in out, "the scan's text layer read into Markdown"
    assert re.search(r"^1\. linn-sequencer-scan\.pdf .* page 1 ", out, re.M), out
    assert re.search(r"open http://127\.0\.0\.1:8000/documents/[0-9a-f]{64}/pages/1\?", out), out
    assert "--watch" in out
