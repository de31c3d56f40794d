"""A watched folder: what arrives, changes, moves or goes is ingested once it has settled, by
the system's notifications or by polling; the CLI follows a folder until Ctrl-C."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bucketdigest.ingestor import ingest as ingest_module
from bucketdigest.ingestor.ingest import Ingestor, IngestReport, IngestSettings, sha256_file
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.watch import WatchSettings, _Changes, _RememberingFolder, watch_folder
from bucketdigest.runner.local import run_watching
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.errors import SourceError
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.manifests import read_manifest
from bucketdigest.shared.records import IngestRun, Ticket
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import WorkerSettings
from tests.clocks import MovableClock
from tests.waiting import wait_until

SETTLE = 0.3
NOTES = IngestSettings(file_filter=FileFilter(exts=frozenset({"txt", "md"})))


def _queued(store: LocalStore, path: Path) -> Ticket | None:
    digest, _ = sha256_file(path)
    found = store.head(keys.queue_key(QueueState.TODO, digest))
    return Ticket.from_json(store.get(found.key).data) if found else None


class _Watching:
    def __init__(self, store: LocalStore, folder: Path, poll: bool) -> None:
        self.reports: list[IngestReport] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=watch_folder,
            args=(store, folder, NOTES, self.reports.append, self.stop),
            kwargs={"watch": WatchSettings(settle_seconds=SETTLE, poll=poll)},
        )

    def removed(self) -> list[str]:
        return [r.path for report in self.reports for r in report.run.removed]


@pytest.fixture(params=["notifications", "polling"])
def watching(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[_Watching, Path]]:
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "before.txt").write_text("written while nobody watched")
    store = LocalStore(tmp_path / "bucket")
    watch = _Watching(store, folder, poll=request.param == "polling")
    watch.thread.start()
    yield watch, folder
    watch.stop.set()
    watch.thread.join(timeout=30)
    assert not watch.thread.is_alive()


def test_a_watched_folder_takes_in_new_changed_moved_and_removed_files(
    watching: tuple[_Watching, Path], tmp_path: Path
) -> None:
    watch, folder = watching
    store = LocalStore(tmp_path / "bucket")
    wait_until(lambda: watch.reports, "the first scan never ran")
    # written moments before the watch began, it is taken once it has settled
    wait_until(lambda: _queued(store, folder / "before.txt"), "the watch did not catch up")

    (folder / "new").mkdir()
    arrived = folder / "new" / "arrived.md"
    arrived.write_text("# Arrived\n\nA note dropped in the folder.")
    ticket = wait_until(lambda: _queued(store, arrived), "a new file was never queued")
    assert ticket.names == ("new/arrived.md",)

    arrived.write_text("# Arrived\n\nThe same note, changed.")
    changed = wait_until(lambda: _queued(store, arrived), "a changed file was never queued")
    assert changed.supersedes == ticket.digest

    arrived.rename(folder / "renamed.md")
    moved = wait_until(
        lambda: next((r for r in watch.reports if "renamed.md" in {f.path for f in r.files}), None),
        "a renamed file was never seen",
    )
    assert (moved.run.uploaded, moved.run.queued) == (0, 0), "the same bytes: the same document"
    assert "new/arrived.md" in watch.removed()

    (folder / "renamed.md").unlink()
    wait_until(lambda: "renamed.md" in watch.removed(), "a removal was never recorded")


def test_the_folder_is_taken_in_only_once_it_has_stopped_changing() -> None:
    """A file being written keeps changing: the folder counts as settled only once the settle
    time has passed since the last change (the clock is the test's)."""
    now = [100.0]
    changes = _Changes(lambda: now[0], ignored=[])

    class Event:
        event_type = "modified"
        src_path = "/scans/big.pdf"

    assert not changes.settled(2.0), "nothing changed yet"
    changes.on_any_event(Event())  # type: ignore[arg-type]
    now[0] += 1.5
    changes.on_any_event(Event())  # type: ignore[arg-type]  # still being written
    now[0] += 1.9
    assert not changes.settled(2.0)
    now[0] += 0.2
    assert changes.settled(2.0), "2 s without a change"
    assert not changes.settled(2.0), "taken once"

    class Read:
        event_type = "opened"
        src_path = "/scans/big.pdf"

    changes.on_any_event(Read())  # type: ignore[arg-type]  # a scan reading the file
    now[0] += 10
    assert not changes.settled(2.0), "reading a file is no change"


def test_watching_what_is_not_a_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not a folder"):
        watch_folder(
            LocalStore(tmp_path / "bucket"),
            tmp_path / "missing",
            IngestSettings(),
            lambda report: None,
            threading.Event(),
        )


def _interruptible(command: list[str]) -> subprocess.Popen[str]:
    """``command`` started as a shell starts it, Ctrl-C delivered as SIGINT: a runner that
    ignores SIGINT (pytest-xdist's workers) would pass that on, and Python turns no SIGINT
    into KeyboardInterrupt in a process that starts with it ignored."""
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_ingest_watch_follows_a_folder_until_ctrl_c(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    bucket = tmp_path / "bucket"
    command = [sys.executable, "-m", "bucketdigest", "ingest", str(folder), "--watch"]
    command += ["--settle", str(SETTLE), "--ext", "txt", "--bucket", str(bucket)]
    process = _interruptible(command)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")))
    reader.start()
    try:
        store = LocalStore(bucket)
        wait_until(lambda: any(store.list(keys.REGISTRY_RUNS_PREFIX)), "the first scan never ran")
        dropped = folder / "dropped.txt"
        dropped.write_text("dropped in while watched")
        wait_until(lambda: _queued(store, dropped), "a file dropped in was never queued")
        # its ingest is reported once the run is recorded: Ctrl-C after the line, not before
        wait_until(lambda: any("queued 1" in line for line in lines), "the ingest was not shown")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        reader.join()
    output = "".join(lines)
    assert process.returncode == 0, output
    assert f"watching {folder}" in output
    assert "queued 1" in output
    assert f"stopped watching {folder}" in output


def test_a_scan_hashes_only_the_files_that_changed(
    watching: tuple[_Watching, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, folder = watching
    store = LocalStore(tmp_path / "bucket")
    hashed: list[str] = []

    def counting(path: Path) -> tuple[str, int]:
        hashed.append(path.name)
        return sha256_file(path)

    wait_until(lambda: _queued(store, folder / "before.txt"), "the watch did not catch up")
    monkeypatch.setattr(ingest_module, "sha256_file", counting)
    later = folder / "later.txt"
    later.write_text("one more note")
    wait_until(lambda: _queued(store, later), "a new file was never queued")
    assert hashed == ["later.txt"], "before.txt kept its hash: same size, same mtime"


def test_run_watch_converts_what_arrives_until_ctrl_c(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    bucket = tmp_path / "bucket"
    command = [sys.executable, "-m", "bucketdigest", "run", str(folder), "--watch"]
    command += ["--settle", str(SETTLE), "--ext", "txt", "--workers", "1", "--bucket", str(bucket)]
    process = _interruptible(command)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")))
    reader.start()
    try:
        dropped = folder / "dropped.txt"
        dropped.write_text("A note about the tithe barn, dropped in while watched.")
        wait_until(
            lambda: process.poll() is not None or any("done dropped.txt" in x for x in lines),
            "a file dropped in was never converted",
            seconds=300,
        )
        assert process.poll() is None, "the watch ended by itself"
        digest, _ = sha256_file(dropped)
        assert LocalStore(bucket).head(keys.out_key(digest)), "its result is in the bucket"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
        reader.join()
    assert process.returncode == 0, "".join(lines)
    assert f"stopped watching {folder}\n" in lines


def test_a_local_bucket_kept_in_the_watched_folder_is_left_alone(tmp_path: Path) -> None:
    """The sources it keeps are not the folder's documents a second time."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "note.txt").write_text("a note beside the bucket")
    store = LocalStore(folder / "bucketdigest-data")
    reports: list[IngestReport] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=watch_folder,
        args=(store, folder, NOTES, reports.append, stop),
        kwargs={"watch": WatchSettings(settle_seconds=SETTLE), "ignored": [store.root]},
    )
    thread.start()
    try:
        wait_until(lambda: reports, "the first scan never ran")
        (folder / "second.txt").write_text("a second note")
        wait_until(lambda: len(reports) >= 2, "the second note was never scanned")
    finally:
        stop.set()
        thread.join(timeout=30)
    paths = {f.path for report in reports for f in report.files}
    assert paths == {"note.txt", "second.txt"}, "the bucket's copies are not documents"


def _watch_run(
    bucket: Path, folder: Path, stop: threading.Event, clock: MovableClock
) -> threading.Thread:
    settings = WorkerSettings(idle_sleep=0.1, monitor_every=None)
    watch = WatchSettings(settle_seconds=2.0, clock=lambda: clock().timestamp())
    thread = threading.Thread(
        target=run_watching,
        args=(StoreSettings(bucket=str(bucket)), [folder], NOTES, 1, settings),
        kwargs={"watch": watch, "stop": stop},
    )
    thread.start()
    return thread


@pytest.mark.slow
def test_thirty_files_copied_in_slowly_renamed_removed_and_added_while_down_are_each_done_once(
    tmp_path: Path,
) -> None:
    folder, bucket = tmp_path / "scans", tmp_path / "bucket"
    folder.mkdir()
    store = LocalStore(bucket)
    stop = threading.Event()
    clock = MovableClock()
    running = _watch_run(bucket, folder, stop, clock)
    names = _write(
        folder, "batch/{n:02d}.md", "# Note {n}\n\nThe ledger of the mill, entry {n}.\n", 29
    )
    # the thirtieth, copied in chunks over 2.5 s of the watch's clock, each under the settle
    # time after the one before (each chunk's write stamped with that clock): taken once, whole
    slow = folder / "slow.md"
    chunks = ["# Slow copy\n\n", *(f"Line {n} of the slow copy.\n" for n in range(8)), "THE END\n"]
    with open(slow, "w") as handle:
        for chunk in chunks:
            handle.write(chunk)
            handle.flush()
            written = int(clock().timestamp() * 1e9)
            os.utime(slow, ns=(written, written))
            clock.advance(0.25)
    names["slow.md"] = "".join(chunks)

    def done(expected: dict[str, str]) -> bool:
        return all(store.head(keys.out_key(_digest(t))) for t in expected.values())

    wait_until(lambda: done(names), "the copied files were not all done", seconds=300)
    (folder / "batch/00.md").rename(folder / "batch/renamed.md")
    (folder / "batch/01.md").unlink()

    def seen_moved() -> bool:
        manifest = read_manifest(store, str(folder.resolve()))
        held = {p.path for p in manifest.paths} if manifest else set()
        return "batch/renamed.md" in held and "batch/01.md" not in held

    wait_until(seen_moved, "the rename and the removal were not taken in", seconds=60)
    stop.set()
    running.join(timeout=120)
    assert not running.is_alive()

    # added while nobody watched: the next watch catches up
    later = _write(
        folder, "later/{n}.md", "# Later {n}\n\nWritten while the watcher was down, {n}.\n", 3
    )
    stop = threading.Event()
    running = _watch_run(bucket, folder, stop, clock)
    try:
        wait_until(lambda: done(later), "what was added while down was not done", seconds=300)
    finally:
        stop.set()
        running.join(timeout=120)

    every = {**names, **later}
    assert len(list(store.list(keys.OUT_PREFIX))) == len(every), "a partial copy became a document"
    with zipfile.ZipFile(store.root / keys.out_key(_digest(names["slow.md"]))) as result:
        assert "THE END" in result.read("document.md").decode()
    runs = [
        IngestRun.from_json(store.get(i.key).data) for i in store.list(keys.REGISTRY_RUNS_PREFIX)
    ]
    assert sum(r.queued for r in runs) == len(every), "a document was queued twice"
    # both old paths are gone; the renamed one's document is still held (not queued again)
    assert sorted(p.path for r in runs for p in r.removed) == ["batch/00.md", "batch/01.md"]
    manifest = read_manifest(store, str(folder.resolve()))
    assert manifest is not None
    held = {p.path for p in manifest.paths}
    assert held == (set(every) - {"batch/00.md", "batch/01.md"}) | {"batch/renamed.md"}


def _write(folder: Path, name: str, text: str, count: int) -> dict[str, str]:
    """``count`` notes written into ``folder`` (``{n}`` numbers them): their paths and texts."""
    written = {name.format(n=n): text.format(n=n) for n in range(count)}
    for path, body in written.items():
        (folder / path).parent.mkdir(exist_ok=True)
        (folder / path).write_text(body)
    return written


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_file_written_moments_ago_is_left_for_a_later_scan_not_read_half_way(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "old.txt").write_text("settled long ago")
    store = LocalStore(tmp_path / "bucket")
    first = _RememberingFolder(folder, NOTES, {}, [], WatchSettings(settle_seconds=0.0))
    Ingestor(store).ingest([first])
    (folder / "old.txt").write_text("being rewritten, half done")
    (folder / "copying.txt").write_text("the first half of a copy")
    scan = _RememberingFolder(folder, NOTES, {}, [], WatchSettings(settle_seconds=60.0))
    report = Ingestor(store).ingest([scan])
    assert scan.unsettled and report.files == [] and report.run.errors == ()
    assert report.run.removed == (), "a file left for later is not a removed one"
    assert _queued(store, folder / "copying.txt") is None
