"""The library's entry point: what a Python program does with ``from bucketdigest import
Bucket``, end to end on real documents."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import bucketdigest
from bucketdigest import Bucket
from bucketdigest.shared.errors import NotFound
from bucketdigest.shared.samples import make_pdf
from tests.search.conftest import write_topics


def test_a_program_ingests_works_indexes_searches_and_reads_results(tmp_path: Path) -> None:
    write_topics(tmp_path / "notes")
    bucket = Bucket(tmp_path / "bucket")
    report = bucket.ingest(tmp_path / "notes", ext="text")
    assert len(report.files) == 5
    assert bucket.work().outcomes == {"done": 5}
    assert bucket.index().added == 0, "the worker indexed what it finished before it left"
    hits = bucket.search("boarding the enemy ship", limit=3)
    assert hits[0].names == ("naval/broadsides.md",)
    assert bucket.search("crops and farming villages", documents=True, mode="semantic")[
        0
    ].names == ("world/harvest.md",)
    assert bucket.status().counts == {"todo": 0, "processing": 0, "failed": 0, "done": 5}
    assert {entry.path for entry in bucket.files()} >= {"melee/grappling.md"}
    with bucket.result("grappling.md") as result:
        assert "a pinned creature cannot move" in result.text("document.md")
        assert result.info()["names"] == ["melee/grappling.md"]


def test_a_document_not_done_has_no_result_and_unknown_names_fail(tmp_path: Path) -> None:
    bucket = Bucket(tmp_path / "bucket")
    write_topics(tmp_path / "notes")
    bucket.ingest(tmp_path / "notes", ext="text")
    with pytest.raises(NotFound):
        bucket.result("melee/grappling.md")
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        bucket.__class__.__module__  # noqa: B018 - the class loaded
        getattr(bucketdigest, "Nothing")  # noqa: B009


ROOT = Path(__file__).resolve().parents[1]


def test_the_package_lists_its_names_and_says_its_version() -> None:
    names = dir(bucketdigest)
    for name in ("Bucket", "SearchRequest", "Status", "DocState", "ConfigError", "__version__"):
        assert name in names and name in bucketdigest.__all__
    assert bucketdigest.__version__.split(".")[0].isdigit()
    assert issubclass(bucketdigest.DamagedResult, bucketdigest.BucketdigestError)


@pytest.mark.slow
def test_a_type_checker_sees_the_types_of_the_installed_package(tmp_path: Path) -> None:
    """The wheel a user installs, read by mypy as a user's program: typed names, not Any."""
    wheel = tmp_path / "wheel"
    build = ["pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheel)]
    subprocess.run([sys.executable, "-m", *build, str(ROOT)], check=True, capture_output=True)
    site = tmp_path / "site"
    with zipfile.ZipFile(next(wheel.glob("*.whl"))) as archive:
        archive.extractall(site)
    assert (site / "bucketdigest" / "py.typed").is_file()
    program = tmp_path / "program.py"
    program.write_text(
        "from bucketdigest import Bucket, SearchRequest, Status, __version__\n"
        "bucket = Bucket('./library')\n"
        "reveal_type(bucket)\n"
        "reveal_type(bucket.search('x'))\n"
        "reveal_type(bucket.status())\n"
        "reveal_type(__version__)\n"
        "bucket.search(42)\n"
    )
    mypy = ["mypy", "--follow-imports=silent", "--ignore-missing-imports"]
    checked = subprocess.run(
        [sys.executable, "-m", *mypy, "--cache-dir", str(tmp_path / "cache"), str(program)],
        capture_output=True,
        text=True,
        env={"MYPYPATH": str(site), "PATH": ""},
    )
    out = checked.stdout
    assert 'Revealed type is "bucketdigest.runner.bucket.Bucket"' in out, out
    assert 'Revealed type is "list[bucketdigest.search.hit.Hit]"' in out, out
    assert 'Revealed type is "bucketdigest.monitor.status.Status"' in out, out
    assert 'Revealed type is "str"' in out, out
    assert 'incompatible type "int"; expected "str"' in out, "a wrong call is caught"


@pytest.mark.heavy  # the example's bucket.work() runs a worker (its converter in a child)
def test_the_readme_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Python library") :]
    example = section[section.index("```python") + len("```python") : section.index("```\n\n")]
    home = tmp_path / "home"
    write_topics(home / "pdfs")  # notes: grappling, ships...
    make_pdf(home / "pdfs" / "rules" / "core.pdf", title="Core Rules", pages=2, seed=1)
    for name in list((home / "pdfs").rglob("*.md"))[2:]:
        name.unlink()  # three documents, as the example's comments say
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "{'done': 3}" in printed
    assert "{'todo': 0, 'processing': 0, 'failed': 0, 'done': 3}" in printed
    assert "rules/core.pdf" in printed and "Core Rules" in printed
    assert (tmp_path / "library" / "index").is_dir(), "the worker indexed what it did"


def test_a_local_source_that_is_not_there_raises(tmp_path: Path) -> None:
    bucket = Bucket(tmp_path / "bucket")
    with pytest.raises(bucketdigest.SourceError, match="no such file or folder"):
        bucket.ingest(tmp_path / "nowhere")


def test_a_program_hands_documents_in_one_at_a_time_and_they_are_done(tmp_path: Path) -> None:
    bucket = Bucket(tmp_path / "bucket")
    scan = make_pdf(tmp_path / "scan-0001.pdf", title="Handed In", pages=1, seed=31)
    notes = tmp_path / "n.md"
    notes.write_text("# Notes\n\nThe lighthouse keeper logs every ship.\n")
    report = bucket.upload(scan, notes, names=["2026/scan.pdf", "notes/lighthouse.md"])
    assert [f.path for f in report.files] == ["2026/scan.pdf", "notes/lighthouse.md"]
    assert bucket.work().outcomes == {"done": 2}
    assert bucket.search("lighthouse keeper")[0].names == ("notes/lighthouse.md",)
    assert bucket.upload(scan).files[0].state is bucketdigest.DocState.DONE  # same bytes

    (tmp_path / "setup.exe").write_bytes(b"MZ")
    (tmp_path / "empty.pdf").write_bytes(b"")
    for bad, reason in (("setup.exe", "no digester handles .exe"), ("empty.pdf", "empty")):
        with pytest.raises(bucketdigest.SourceError, match=reason):
            bucket.upload(tmp_path / bad)


def test_a_script_that_starts_a_run_without_a_main_guard_stops_and_says_why(
    tmp_path: Path,
) -> None:
    """Workers are spawned: each runs the script's top level again, which starts a run of its
    own and dies. The run started them again for ever (a scratch script of ours filled a disk
    with copies of its corpus); it now stops after a few launches, naming the guard."""
    script = tmp_path / "convert.py"
    script.write_text(
        "import sys\nfrom bucketdigest import Bucket\n\nBucket(sys.argv[1]).run(sys.argv[2])\n"
    )
    make_pdf(tmp_path / "in" / "rules.pdf", title="Rules", pages=1)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "bucket"), str(tmp_path / "in")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "bucketdigest.shared.errors.WorkersDied" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert "1 document(s) wait in the bucket" in done.stderr
