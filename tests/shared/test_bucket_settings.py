"""The bucket's settings: one versioned record every worker and monitor follows, changed by one
editor at a time, and refused to any process flag that would shadow it."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from bucketdigest import Bucket
from bucketdigest.cli.main import cli
from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.serve.app import create_app
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared import bucket_settings, keys, queue
from bucketdigest.shared.bucket_settings import change_settings, read_settings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import ConfigError, Conflict, DamagedSettings
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import Ticket
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from bucketdigest.worker.reprocess import reprocess
from tests.clocks import MovableClock

TOKEN = "a-test-token-of-some-length"


def _todo_ticket(store: LocalStore, digest: str) -> Ticket:
    found = queue.todo_marker(store, digest)
    assert found is not None, f"{digest} is not queued"
    return Ticket.from_json(found[1].data)


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_each_change_is_a_new_version_and_an_editor_who_read_an_old_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    assert read_settings(store) == (bucket_settings.BucketSettings(), None)
    first = change_settings(store, {"max_attempts": 5})
    second = change_settings(store, {"ocr_language": "eng+deu"})
    assert (first.version, second.version) == (1, 2)
    assert (first.chain_version, second.chain_version) == (0, 1), "only the chain's count"
    assert second.chosen() == {"max_attempts": 5, "ocr_language": "eng+deu"}
    stale = read_settings(store)
    change_settings(store, {"retry_delay": 1.0})  # another editor, meanwhile
    monkeypatch.setattr(bucket_settings, "stored_settings", lambda _: stale)
    with pytest.raises(Conflict, match="changed while you edited"):
        change_settings(store, {"max_attempts": 2})
    monkeypatch.undo()
    assert read_settings(store)[0].max_attempts == 5
    with pytest.raises(ConfigError, match="converter_mode is one of layout, legacy"):
        change_settings(store, {"converter_mode": "magic"})
    with pytest.raises(ConfigError, match="embedding_precision is one of int8, float32"):
        change_settings(store, {"embedding_precision": "int4"})
    with pytest.raises(ConfigError, match="no setting 'colour'"):
        change_settings(store, {"colour": "red"})


def test_a_worker_follows_the_bucket_and_its_results_name_the_settings_version(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    bucket = Bucket(tmp_path / "bucket")
    settings = bucket.configure(converter_mode="legacy", max_attempts=2)
    make_pdf(tmp_path / "in" / "a.pdf", title="Alpha", pages=2, seed=1)
    Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())])
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None)).run()
    (result,) = store.list(keys.OUT_PREFIX)
    with zipfile.ZipFile(io.BytesIO(store.get(result.key).data)) as archive:
        info = json.loads(archive.read("info.json"))
    assert info["provenance"]["settings_version"] == settings.version == 1
    assert '"legacy"' in json.dumps(info["converter"]), "the worker's default was layout"
    digest = keys.parse_out_key(result.key)

    assert reprocess(store, [digest], None, outdated=True).skipped == {digest: "up to date"}
    bucket.configure(max_attempts=3)  # the queue's: results are not outdated by it
    assert reprocess(store, [digest], None, outdated=True).skipped == {digest: "up to date"}
    bucket.configure(keep_headers=True)  # the chain's: every result made before is
    again = reprocess(store, [digest], None, outdated=True)
    assert again.requeued[digest][0] == "doc-to-markdown"


def test_a_ticket_carries_the_attempts_set_when_it_was_queued_and_all_roles_agree(
    tmp_path: Path,
) -> None:
    clock = MovableClock()
    store = LocalStore(tmp_path / "bucket", clock=clock)
    change_settings(store, {"max_attempts": 1})
    make_pdf(tmp_path / "in" / "a.pdf", title="Alpha", pages=1, seed=1)
    make_pdf(tmp_path / "later" / "b.pdf", title="Beta", pages=1, seed=2)
    first = Ingestor(store).ingest([FolderSource(tmp_path / "in", FileFilter())]).files[0].digest
    change_settings(store, {"max_attempts": 2})
    later = Ingestor(store).ingest([FolderSource(tmp_path / "later", FileFilter())]).files[0]
    tickets = {d: _todo_ticket(store, d).max_attempts for d in (first, later.digest)}
    assert tickets == {first: 1, later.digest: 2}, "each ticket: the setting when queued"

    # a monitor started with 3 dead-letters each at its ticket's budget, not its own
    for digest in (first, later.digest):
        assert queue.claim(store, digest, "lost-worker", 1.0).job is not None
    clock.advance(60)
    swept = sweep(store, MonitorSettings(max_attempts=3))
    assert swept.dead_lettered == [first] and swept.requeued == [later.digest]
    failure = json.loads(store.get(keys.queue_key(QueueState.FAILED, first)).data)
    assert "lease expired on attempt 1 of 1" in failure["error"]

    # a retry starts over with the budget of the day
    change_settings(store, {"max_attempts": 4})
    assert queue.retry(store, first)
    assert _todo_ticket(store, first).max_attempts == 4


def test_the_command_line_shows_and_sets_them_and_refuses_a_flag_that_shadows_one(
    tmp_path: Path,
) -> None:
    bucket = str(tmp_path / "bucket")
    code, _ = _cli("ingest", str(tmp_path), "--bucket", bucket)  # makes the bucket
    code, output = _cli("config", "set", "max_attempts", "5", "--bucket", bucket)
    assert code == 0 and "settings version 1" in output and "max_attempts = 5" in output
    code, output = _cli("config", "set", "lease_seconds", "0", "--bucket", bucket)
    assert code == 1 and "lease_seconds must be 1 or more" in output
    code, output = _cli("config", "show", "--bucket", bucket)
    assert 'ocr_language = (default: "eng")' in output
    for command in (["work", "--exit-when-idle"], ["monitor", "--once"]):
        code, output = _cli(*command, "--max-attempts", "3", "--bucket", bucket)
        assert code == 1, (command, output)
        assert "bucketdigest config set max_attempts" in output
    code, output = _cli("work", "--exit-when-idle", "--max-attempts", "5", "--bucket", bucket)
    assert code == 0, "the same value shadows nothing"
    code, output = _cli("config", "set", "max_attempts", "default", "--bucket", bucket)
    assert "max_attempts = (default: 3)" in output
    code, output = _cli("status", "--json", "--bucket", bucket)
    assert json.loads(output)["settings_version"] == 2

    # unset, a flag still may not make one process differ from the rest (the default)
    code, output = _cli("monitor", "--once", "--max-attempts", "2", "--bucket", bucket)
    assert code == 1 and "differs from the bucket's max_attempts = 3 (its default)" in output
    for flags in (["--ocr-language", "deu"], ["--run-window", "22:00-06:00"], ["--keep-headers"]):
        code, output = _cli("work", "--exit-when-idle", *flags, "--bucket", bucket)
        assert code == 1 and "bucketdigest config set" in output, (flags, output)
    code, output = _cli(
        "config", "set", "run_window", "22:00-06:00,07:00Z-08:00Z", "--bucket", bucket
    )
    assert 'run_window = ["22:00-06:00", "07:00Z-08:00Z"]' in output
    code, output = _cli("config", "set", "llm_url", "http://llm:8000/v1", "--bucket", bucket)
    assert code == 1 and "llm_url and llm_model go together" in output


def test_run_sets_what_its_flags_give_where_the_bucket_leaves_it_unset(tmp_path: Path) -> None:
    bucket = str(tmp_path / "bucket")
    make_pdf(tmp_path / "in" / "a.pdf", title="Alpha", pages=1, seed=1)
    code, output = _cli(
        "run", str(tmp_path / "in"), "--bucket", bucket, "--converter-mode", "legacy"
    )
    assert code == 0, output
    settings = Bucket(bucket).settings
    assert (settings.converter_mode, settings.version) == ("legacy", 1)
    code, output = _cli("work", "--exit-when-idle", "--bucket", bucket)
    assert code == 0, "a worker without flags follows"
    code, output = _cli(
        "run", str(tmp_path / "in"), "--bucket", bucket, "--converter-mode", "layout"
    )
    assert code == 1 and "config set converter_mode layout" in output


def test_the_api_reads_them_and_changes_them_with_the_token(tmp_path: Path) -> None:
    LocalStore(tmp_path)
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path)), token=TOKEN, allowed_hosts=("testserver",)
    )
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/settings").json()["max_attempts"] is None
        refused = client.put("/api/settings", json={"max_attempts": 4})
        assert refused.status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        changed = client.put("/api/settings", json={"max_attempts": 4}, headers=auth)
        assert changed.status_code == 200 and changed.json()["version"] == 1
        bad = client.put("/api/settings", json={"lease_seconds": 0}, headers=auth)
        assert bad.status_code == 400 and "lease_seconds must be 1 or more" in bad.json()["detail"]
        assert client.get("/api/settings").json()["max_attempts"] == 4
        page = client.get("/status").text
        assert "Bucket settings" in page and "<code>max_attempts</code></td><td>4<" in page
        assert '<code>ocr_language</code></td><td><span class="muted">default' in page


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"lease_seconds": "abc"}, "lease_seconds takes a finite number, not 'abc'"),
        ({"lease_seconds": 1e308}, "lease_seconds must be 86,400 or less"),
        ({"retry_delay": float("nan")}, "retry_delay takes a finite number"),
        ({"max_attempts": True}, "max_attempts takes a whole number, not True"),
        ({"max_attempts": 2.5}, "max_attempts takes a whole number"),
        ({"max_attempts": 10**12}, "max_attempts must be 100 or less"),
        ({"ocr_language": "../../etc"}, "'../../etc' is not Tesseract's language names"),
        ({"keep_headers": "yes"}, "keep_headers takes true or false"),
        ({"events": "https://example.com/hook"}, "events takes a list of at most 32 texts"),
        ({"run_window": [1]}, "run_window takes a list"),
        ({"llm_url": "http://x/v1", "llm_model": {"a": 1}}, "llm_model takes text"),
        ({"events_secret": 5}, "events_secret takes text"),
        ({"inbox_max_bytes": 10**17}, "inbox_max_bytes must be 5,497,558,138,880 or less"),
    ],
)
def test_a_value_of_another_type_or_past_its_bounds_is_refused_with_its_reason(
    tmp_path: Path, changes: dict[str, object], reason: str
) -> None:
    """What a client sends as JSON may be of any type: refused by name with a 400, never
    written for the fleet to trip over (a lease of 1e308 seconds ends past any date)."""
    LocalStore(tmp_path)
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path)), token=TOKEN, allowed_hosts=("testserver",)
    )
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with TestClient(create_app(settings)) as client:
        refused = client.put("/api/settings", content=json.dumps(changes), headers=headers)
        assert refused.status_code == 400, refused.text
        assert reason in refused.json()["detail"]
        assert client.get("/api/settings").json()["version"] == 0, "nothing written"


def test_a_record_written_by_hand_with_a_refused_value_is_followed_by_nobody_until_mended(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    change_settings(store, {"lease_seconds": 120.0, "ocr_language": "deu"})
    watch = bucket_settings.SettingsWatch(store)
    record = json.loads(store.get(keys.SETTINGS_KEY).data)
    store.put(keys.SETTINGS_KEY, json.dumps(record | {"lease_seconds": 1e308}).encode())

    with pytest.raises(DamagedSettings, match=r"lease_seconds must be 86,400 or less.*config edit"):
        read_settings(store)
    assert watch.changed() is None and watch.current.lease_seconds == 120, "the last good ones"
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path)), token=TOKEN, allowed_hosts=("testserver",)
    )
    with TestClient(create_app(settings)) as client:
        shown = client.get("/api/settings")
        assert shown.status_code == 503 and "lease_seconds" in shown.json()["detail"]
        refused = client.put(
            "/api/settings", json={"max_attempts": 4}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert refused.status_code == 400 and "lease_seconds" in refused.json()["detail"]

    # config edit opens the record as stored and saves it mended
    edited = CliRunner().invoke(
        cli,
        ["config", "edit", "--bucket", str(tmp_path)],
        env={"EDITOR": "sed -i s/1e+308/600.0/"},
        catch_exceptions=False,
    )
    assert edited.exit_code == 0, edited.output
    mended = read_settings(store)[0]
    assert (mended.lease_seconds, mended.ocr_language) == (600.0, "deu")
    assert watch.changed() == mended


def test_a_bucket_without_settings_keeps_todays_defaults(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    following = WorkerSettings().following(read_settings(store)[0])
    assert following == WorkerSettings()
