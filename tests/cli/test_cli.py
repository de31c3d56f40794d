"""The command line: exit codes, output, help, and that README documents every command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bucketdigest.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help_with_an_example_and_appears_in_the_readme(command: str) -> None:
    code, output = _invoke(command, "--help")
    assert code == 0
    assert "Example: bucketdigest " + command in output
    assert re.search(rf"bucketdigest {command}\b", (ROOT / "README.md").read_text())


def test_run_converts_a_folder_and_exits_zero(tmp_path: Path, pdf_folder: Path) -> None:
    bucket = tmp_path / "bucket"
    code, output = _invoke(
        "run", str(pdf_folder), "--bucket", str(bucket), "--converter-mode", "legacy"
    )
    assert code == 0, output
    assert "done: 3 documents" in output
    assert "search index: 3 of 3 documents searchable" in output
    assert len(list((bucket / "store" / "out").glob("*.zip"))) == 3
    code, output = _invoke("status", "--bucket", str(bucket), "--json")
    assert json.loads(output)["counts"] == {"todo": 0, "processing": 0, "failed": 0, "done": 3}


def test_a_folder_of_types_not_asked_for_gets_a_hint_naming_the_ext_that_takes_them(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sounds"
    folder.mkdir()
    for n in range(3):
        (folder / f"take-{n}.wav").write_bytes(b"RIFF")
    (folder / "notes.xyz").write_text("?")
    code, output = _invoke("ingest", str(folder), "--bucket", str(tmp_path / "b"))
    assert code == 0, output
    assert "discovered 0" in output
    flat = " ".join(output.split())
    assert "hint 4 file(s) of other types left out (3 .wav, 1 .xyz): add --ext audio" in flat


def test_run_exits_one_and_names_the_documents_that_failed(
    tmp_path: Path, pdf_folder: Path
) -> None:
    (pdf_folder / "broken.pdf").write_text("not a pdf")
    code, output = _invoke(
        "run", str(pdf_folder), "--bucket", str(tmp_path / "b"), "--converter-mode", "legacy"
    )
    assert code == 1
    assert "failed broken.pdf: not a readable PDF file" in output.replace("\n", " ")
    code, output = _invoke("status", "--bucket", str(tmp_path / "b"), "--json")
    status = json.loads(output)
    assert status["counts"]["failed"] == 1
    assert status["failures"][0]["name"] == "broken.pdf"


def test_ingest_reports_a_missing_source_and_exits_one(tmp_path: Path) -> None:
    code, output = _invoke("ingest", str(tmp_path / "nope"), "--bucket", str(tmp_path / "b"))
    assert code == 1
    assert "no such file, folder or repository" in output


def test_a_bad_bucket_url_is_a_clean_error(tmp_path: Path) -> None:
    code, output = _invoke("status", "--bucket", "ftp://somewhere")
    assert code == 1
    assert "unsupported bucket URL" in output


def test_a_store_that_ignores_conditional_writes_is_refused(
    tmp_path: Path, moto_endpoint: str, moto_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bucketdigest.shared.stores.s3 import S3Store

    monkeypatch.setattr(S3Store, "put_if_absent", lambda self, key, data: self.put(key, data))
    code, output = _invoke(
        "ingest", str(tmp_path), "--bucket", moto_bucket, "--endpoint-url", moto_endpoint
    )
    assert code == 1
    assert "does not enforce conditional writes" in output
    assert moto_bucket.removeprefix("s3://") in output


def test_ls_and_get_find_a_result_by_path_or_hash(tmp_path: Path, pdf_folder: Path) -> None:
    bucket = str(tmp_path / "bucket")
    code, _ = _invoke("run", str(pdf_folder), "--bucket", bucket, "--converter-mode", "legacy")
    assert code == 0
    code, output = _invoke("ls", "--bucket", bucket, "--json")
    rows = [json.loads(line) for line in output.splitlines()]
    assert sorted(r["path"] for r in rows) == ["alpha.pdf", "beta.pdf", "sub/gamma.pdf"]
    assert {r["state"] for r in rows} == {"done"}
    code, output = _invoke("get", "gamma.pdf", "--bucket", bucket, "-o", str(tmp_path / "g"))
    assert code == 0, output
    assert "Gamma rules" in (tmp_path / "g" / "document.md").read_text()
    digest = next(r["digest"] for r in rows if r["path"] == "beta.pdf")
    code, _ = _invoke("get", digest, "--bucket", bucket, "-o", str(tmp_path / "b"))
    assert "Beta rules" in (tmp_path / "b" / "document.md").read_text()
    code, output = _invoke("get", "nope.pdf", "--bucket", bucket, "-o", str(tmp_path / "n"))
    assert code == 1 and "no registered file has this path" in output
    for short in (digest[:12], digest[:8].upper()):
        target = tmp_path / f"short-{short}"
        code, output = _invoke("get", short, "--bucket", bucket, "-o", str(target))
        assert code == 0, output
        assert "Beta rules" in (target / "document.md").read_text()
    code, output = _invoke("get", "0000000000ff", "--bucket", bucket, "-o", str(tmp_path / "z"))
    assert code == 1 and "no document's hash starts so" in output
    code, output = _invoke("get", digest[:5], "--bucket", bucket)
    assert code == 1 and "must be 8 hex digits or more" in " ".join(output.split())


def test_get_without_a_folder_unpacks_into_one_named_after_the_file(
    tmp_path: Path, pdf_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = str(tmp_path / "bucket")
    code, _ = _invoke("run", str(pdf_folder), "--bucket", bucket, "--converter-mode", "legacy")
    assert code == 0
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    code, output = _invoke("get", "sub/gamma.pdf", "--bucket", bucket)
    assert code == 0, output
    assert "Gamma rules" in (here / "gamma" / "document.md").read_text()
    assert output.rstrip().endswith("files in gamma")


def test_ingest_takes_repeated_and_comma_separated_extensions(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("a.txt", "b.md", "c.html", "d.wav"):
        (folder / name).write_text(f"# {name}\n\nSome words about {name}.\n")
    bucket = str(tmp_path / "bucket")
    code, output = _invoke(
        "ingest", str(folder), "--bucket", bucket, "--ext", "txt", "--ext", "md,html"
    )
    assert code == 0, output
    code, output = _invoke("ls", "--bucket", bucket, "--json")
    assert sorted(json.loads(line)["path"] for line in output.splitlines()) == [
        "a.txt",
        "b.md",
        "c.html",
    ]


def test_reading_commands_list_only_their_own_options() -> None:
    for command in ("search", "get", "ls", "status"):
        code, output = _invoke(command, "--help")
        assert code == 0 and "--claims" not in output and "--claim-settle" not in output
    code, output = _invoke("work", "--help")
    assert "--claims" in output and "--claim-settle" in output
    code, output = _invoke("search", "--help")
    assert "fused by rank" not in output and "both measures" in " ".join(output.split())


def test_a_damaged_result_is_named_by_get_status_and_check_and_made_again_by_reprocess(
    tmp_path: Path, pdf_folder: Path
) -> None:
    bucket = tmp_path / "bucket"
    code, _ = _invoke("run", str(pdf_folder), "--bucket", str(bucket), "--converter-mode", "legacy")
    assert code == 0
    result = next((bucket / "store" / "out").glob("*.zip"))
    digest = result.stem
    result.write_bytes(result.read_bytes()[:300])
    code, output = _invoke("get", digest[:12], "--bucket", str(bucket), "-o", str(tmp_path / "g"))
    assert code == 1 and "Traceback" not in output
    assert output.strip() == (
        f"Error: {digest}: result damaged (File is not a zip file): reprocess it "
        f"(bucketdigest reprocess {digest[:12]})"
    )
    code, output = _invoke("index", "--bucket", str(bucket))
    assert code == 0 and "1 skipped" in output and "result damaged" in output, output
    code, output = _invoke("status", "--bucket", str(bucket), "--json")
    listed = json.loads(output)["damaged"]
    assert listed == {f"store/out/{digest}.zip": listed[f"store/out/{digest}.zip"]}
    assert "not searchable: result damaged" in listed[f"store/out/{digest}.zip"]
    code, output = _invoke("reprocess", digest[:12], "--bucket", str(bucket))
    assert code == 0 and "requeued 1 document(s)" in output, output
    code, output = _invoke("work", "--bucket", str(bucket), "--exit-when-idle")
    assert code == 0, output
    code, output = _invoke("get", digest[:12], "--bucket", str(bucket), "-o", str(tmp_path / "g"))
    assert code == 0 and (tmp_path / "g" / "document.md").read_text().strip()
    code, output = _invoke("check", "--bucket", str(bucket))
    assert code == 0 and "0 damaged object(s)" in output, output


@pytest.mark.parametrize(
    "command",
    [["status"], ["ls"], ["search", "knights"], ["get", "0969a3aff866", "-o", "out"], ["serve"]],
)
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_read_only_command_on_a_bucket_that_is_not_there_says_so_and_makes_nothing(
    tmp_path: Path, command: list[str], kind: str
) -> None:
    bucket = tmp_path / "no-such-bucket"
    if kind == "file":
        bucket.write_text("not a bucket")
    code, output = _invoke(*command, "--bucket", str(bucket))
    assert code == 1, output
    assert output.strip().splitlines()[-1].startswith(f"Error: no bucket at {bucket}")
    assert "Traceback" not in output
    assert bucket.is_file() if kind == "file" else not bucket.exists()


def test_serve_refuses_writes_without_a_long_enough_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUCKETDIGEST_SERVE_TOKEN", "short")
    result = CliRunner().invoke(cli, ["serve", "--bucket", str(tmp_path), "--allow-writes"])
    assert result.exit_code == 2
    assert "BUCKETDIGEST_SERVE_TOKEN" in result.output


def test_serve_on_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, output = _invoke("serve", "--bucket", str(tmp_path), "--port", str(port))
    assert code == 1, output
    assert f"cannot serve on 127.0.0.1:{port}" in output and "serving" not in output
