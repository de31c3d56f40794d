"""The worker on a real LocalStore with the real converter in its child process."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import zipfile
from dataclasses import replace
from pathlib import Path

import pymupdf
import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.shared import keys
from bucketdigest.shared.attempts import RetryPolicy
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.errors import DigestError
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue.choosing import claim_next
from bucketdigest.shared.records import Failure, Ticket
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.converter import convert
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.job import JobContext, Outcome, run_job
from bucketdigest.worker.loop import AWAKE_SECONDS, AWAKE_SLEEP, Worker, WorkerSettings, idle_wait
from bucketdigest.worker.sandbox import Sandbox, SandboxLimits
from tests.waiting import wait_until
from tests.worker.damaged import raw_pdf

FAST = ConverterOptions(mode="legacy")


def _settings(**changes: object) -> WorkerSettings:
    digest = DigestSettings(converter=FAST)
    values: dict = dict(exit_when_idle=True, monitor_every=None, digest=digest, idle_sleep=0.1)
    values.update(changes)
    return WorkerSettings(**values)


def _ingest(store: LocalStore, folder: Path) -> dict[str, str]:
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter())])
    return {f.path: f.digest for f in report.files}


def _zip(store: LocalStore, digest: str) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(digest)).data))


def test_worker_turns_every_queued_pdf_into_a_zip_holding_its_text(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    digests = _ingest(store, pdf_folder)
    summary = Worker(store, _settings()).run()
    assert summary.exit_reason == "idle: no job left to claim"
    assert summary.outcomes == {"done": 3}
    for path, digest in digests.items():
        archive = _zip(store, digest)
        title = {"alpha.pdf": "Alpha", "beta.pdf": "Beta", "sub/gamma.pdf": "Gamma"}[path]
        assert title in archive.read("document.md").decode()
        info = json.loads(archive.read("info.json"))
        assert info["digest"] == digest and info["names"] == [path]
        assert info["converter"]["options"]["mode"] == "legacy"
        assert info["pages"] == len([n for n in archive.namelist() if n.startswith("pages/")])
        assert any(n.startswith("images/") for n in archive.namelist())
    assert list(store.list("queue/")) == []


def test_max_jobs_stops_the_worker(tmp_path: Path, pdf_folder: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    _ingest(store, pdf_folder)
    summary = Worker(store, _settings(max_jobs=1)).run()
    assert summary.exit_reason == "reached --max-jobs 1"
    assert len(list(store.list(QueueState.TODO.prefix))) == 2


def test_converting_the_same_pdf_twice_gives_the_same_pages(
    tmp_path: Path, pdf_folder: Path
) -> None:
    outputs = []
    for name in ("one", "two"):
        store = LocalStore(tmp_path / name)
        digest = _ingest(store, pdf_folder)["beta.pdf"]
        Worker(store, _settings()).run()
        archive = _zip(store, digest)
        stamped = ("info.json", "digests.json")  # who digested it and when
        outputs.append({n: archive.read(n) for n in archive.namelist() if n not in stamped})
    assert outputs[0] == outputs[1]


def _bad_inputs(folder: Path) -> dict[str, str]:
    folder.mkdir()
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "text.pdf").write_text("this is not a PDF at all\n" * 20)
    good = make_pdf(folder / "good.pdf", title="Good", pages=2, seed=9).read_bytes()
    (folder / "truncated.pdf").write_bytes(good[:200])
    locked = pymupdf.open(folder / "good.pdf")
    locked.save(
        folder / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o"
    )
    return {
        "empty.pdf": "empty",
        "text.pdf": "not a readable PDF",
        "truncated.pdf": "not a readable PDF",
        "locked.pdf": "password-protected",
    }


def test_bad_inputs_are_dead_lettered_at_once_with_a_reason(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    expected = _bad_inputs(tmp_path / "bad")
    digests = _ingest(store, tmp_path / "bad")
    summary = Worker(store, _settings()).run()
    assert summary.outcomes == {"failed": 4, "done": 1}
    for name, reason in expected.items():
        failure = Failure.from_json(
            store.get(keys.queue_key(QueueState.FAILED, digests[name])).data
        )
        assert reason in failure.error, name
        assert failure.ticket.history[-1].error == failure.error
        assert failure.retryable is False
    assert store.head(keys.out_key(digests["good.pdf"])) is not None


def test_a_timeout_is_retried_later_with_backoff(tmp_path: Path, pdf_folder: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, pdf_folder / "sub")["gamma.pdf"]
    limits = SandboxLimits(timeout=0.05, per_page=0)
    summary = Worker(store, _settings(limits=limits, retry_delay=3600, max_jobs=1)).run()
    assert summary.outcomes == {"retrying": 1}
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
    assert ticket.attempt == 2
    assert "timed out after 0.05 s" in ticket.history[0].error
    assert ticket.not_before is not None and ticket.not_before > store.now()
    assert claim_next(store, "w", 60).job is None


def test_the_time_limit_grows_with_the_page_count(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    make_pdf(tmp_path / "long" / "long.pdf", title="Long", pages=30, seed=4)
    digest = _ingest(store, tmp_path / "long")["long.pdf"]
    too_short = SandboxLimits(timeout=0.3, per_page=0.0)
    summary = Worker(store, _settings(limits=too_short, retry_delay=0, max_jobs=1)).run()
    assert summary.outcomes == {"retrying": 1}
    ticket = Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, digest)).data)
    assert "timed out after 0.3 s" in ticket.history[-1].error
    per_page = SandboxLimits(timeout=0.3, per_page=1.0)
    assert Worker(store, _settings(limits=per_page)).run().outcomes == {"done": 1}


def test_the_last_attempt_that_fails_is_dead_lettered_with_its_history(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    change_settings(store, {"max_attempts": 2})  # the ticket carries it from its queueing
    digest = _ingest(store, pdf_folder / "sub")["gamma.pdf"]
    # the digester child cannot start under this cap: every attempt fails, whatever a
    # machine's models take (at 400 MiB some outputs passed on a loaded machine); a timeout no
    # longer does: a converter that runs out of time converts page by page
    settings = _settings(
        limits=SandboxLimits(max_memory=250 << 20),
        digest=DigestSettings(converter=ConverterOptions(mode="layout")),
        retry_delay=0,
    )
    Worker(store, settings).run()
    failure = Failure.from_json(store.get(keys.queue_key(QueueState.FAILED, digest)).data)
    assert [a.attempt for a in failure.ticket.history] == [1, 2]
    assert failure.retryable is True


def test_a_converter_crash_fails_the_document_with_the_signal_and_the_worker_goes_on(
    tmp_path: Path, pdf_folder: Path
) -> None:
    sandbox = Sandbox(SandboxLimits(timeout=60))
    source = make_pdf(tmp_path / "big.pdf", title="Big", pages=40, seed=5)

    def crash_soon() -> None:
        # once the conversion is under way in the child (it makes its images folder first)
        wait_until(lambda: (tmp_path / "work" / "images").is_dir(), "the conversion never began")
        assert sandbox._process is not None
        os.kill(sandbox._process.pid, signal.SIGSEGV)

    threading.Thread(target=crash_soon, daemon=True).start()
    with pytest.raises(Exception, match="crashed: SIGSEGV"):
        sandbox.call(convert, source, "pdf", tmp_path / "work", FAST)
    again = sandbox.call(convert, pdf_folder / "beta.pdf", "pdf", tmp_path / "work2", FAST)
    assert "Beta" in again.pages[0]
    sandbox.close()


def test_a_job_whose_lease_is_taken_over_is_abandoned_without_writing(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    folder = tmp_path / "one"
    make_pdf(folder / "long.pdf", title="Long", pages=40, seed=3)
    digest = _ingest(store, folder)["long.pdf"]
    job = claim_next(store, "zombie", 0.4).job
    assert job is not None
    processing = keys.queue_key(QueueState.PROCESSING, digest)
    store.put(processing, b'{"new": "owner"}')
    sandbox = Sandbox(SandboxLimits(timeout=60))
    ctx = JobContext(
        store,
        sandbox,
        DigestSettings(FAST),
        "zombie",
        0.4,
        RetryPolicy(3, 0),
        lambda: None,
        checkpoint_after=WorkerSettings().checkpoint_after,
    )
    result = run_job(job, ctx)
    sandbox.close()
    assert result.outcome is Outcome.ABANDONED
    assert store.get(processing).data == b'{"new": "owner"}'
    assert store.head(keys.out_key(digest)) is None
    assert store.head(keys.queue_key(QueueState.FAILED, digest)) is None


def _requeued(store: LocalStore, digest: str) -> None:
    """Put ``digest``'s ticket back in line as a job that ran (a worker that wrote the result
    and was lost before it let the claim go, say), so it is no longer untouched."""
    todo = keys.queue_key(QueueState.TODO, digest)
    ticket = Ticket.from_json(store.get(todo).data)
    assert ticket.untouched, "the ingest that stored the source queued it untouched"
    store.put(todo, replace(ticket, untouched=False).to_json())


def test_a_claimed_job_whose_zip_exists_is_finalized_without_converting(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, pdf_folder)["alpha.pdf"]
    _requeued(store, digest)
    store.put(keys.out_key(digest), b"finished elsewhere")
    summary = Worker(store, _settings()).run()
    assert summary.outcomes["already-done"] == 1
    assert store.get(keys.out_key(digest)).data == b"finished elsewhere"
    assert list(store.list("queue/")) == []


def test_an_untouched_job_never_replaces_a_result_it_did_not_look_for(
    tmp_path: Path, pdf_folder: Path
) -> None:
    """An untouched ticket's worker makes no request to find a result (there can be none),
    so one that appears anyway (another ingest's race) is kept by the conditional write."""
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, pdf_folder)["alpha.pdf"]
    store.put(keys.out_key(digest), b"finished elsewhere")
    summary = Worker(store, _settings()).run()
    assert summary.outcomes["done"] == 3
    assert store.get(keys.out_key(digest)).data == b"finished elsewhere"
    assert list(store.list("queue/")) == []


def _zero_page_pdf(path: Path) -> Path:
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    path.write_bytes(raw_pdf(objects))
    return path


def test_odd_but_valid_documents_end_in_out_with_their_problems_noted(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    scanned = pymupdf.open()
    page = scanned.new_page()
    text_page = pymupdf.open(make_pdf(tmp_path / "src.pdf", title="Scan", pages=1, seed=4))[0]
    page.insert_image(page.rect, pixmap=text_page.get_pixmap(dpi=50))
    scanned.save(folder / "image-only.pdf")
    huge = pymupdf.open()
    huge.new_page(width=14400, height=14400).insert_text(
        (100, 100), "A very large page", fontsize=200
    )
    huge.save(folder / "huge.pdf")
    _zero_page_pdf(folder / "zero-pages.pdf")
    store = LocalStore(tmp_path / "bucket")
    digests = _ingest(store, folder)
    Worker(store, _settings()).run()
    image_only = json.loads(_zip(store, digests["image-only.pdf"]).read("info.json"))
    assert image_only["problems"] == ["1 of 1 pages yielded no text (image-only or empty): 1"]
    assert "A very large page" in _zip(store, digests["huge.pdf"]).read("document.md").decode()
    failure = Failure.from_json(
        store.get(keys.queue_key(QueueState.FAILED, digests["zero-pages.pdf"])).data
    )
    assert "no pages" in failure.error


def test_a_memory_cap_fails_the_document_with_that_reason(tmp_path: Path, pdf_folder: Path) -> None:
    sandbox = Sandbox(SandboxLimits(max_memory=400 << 20))
    layout = ConverterOptions(mode="layout")
    # Where the cap bites decides the words ("exceeded memory limit 400 MiB", or a crash "...
    # memory limit 400 MiB may have been hit"); either way the limit is named.
    with pytest.raises(DigestError, match="memory limit 400 MiB"):
        sandbox.call(convert, pdf_folder / "beta.pdf", "pdf", tmp_path / "work", layout)
    sandbox.close()


def test_a_damaged_todo_marker_is_rebuilt_from_the_source_and_the_document_converted(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    digest = _ingest(store, pdf_folder)["beta.pdf"]
    store.put(keys.queue_key(QueueState.TODO, digest), b"{ this is not a ticket")
    orphan = "ee" * 32
    store.put(keys.queue_key(QueueState.TODO, orphan), b"garbage, and no source either")
    summary = Worker(store, _settings()).run()
    assert summary.outcomes == {"done": 3}
    assert "Beta rules" in _zip(store, digest).read("document.md").decode()
    assert list(store.list("queue/")) == []


def test_after_a_job_a_worker_looks_for_the_next_often_then_backs_off() -> None:
    assert idle_wait(5.0, None) == 5.0, "a worker that has done nothing yet waits its idle sleep"
    assert idle_wait(5.0, 1.0) == AWAKE_SLEEP
    assert idle_wait(5.0, AWAKE_SECONDS + 1) == 5.0
    assert idle_wait(0.1, 1.0) == 0.1, "never longer than its idle sleep"


def test_a_document_sent_just_after_another_finds_the_worker_awake(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "first.md").write_text("# First\n\nThe first note.\n")
    md = FileFilter(exts=frozenset({"md"}))
    Ingestor(store).ingest([FolderSource(notes, md)])
    worker = Worker(store, WorkerSettings(idle_sleep=5.0, monitor_every=None, max_jobs=2))
    waits: list[float | None] = []
    wait = worker.stop_requested.wait

    def waiting(timeout: float | None = None) -> bool:
        waits.append(timeout)
        if len(waits) == 3:  # the next document arrives while the worker waits
            (notes / "second.md").write_text("# Second\n\nThe second note.\n")
            Ingestor(store).ingest([FolderSource(notes, md)])
        return wait(0)

    worker.stop_requested.wait = waiting  # type: ignore[method-assign]
    summary = worker.run()
    assert summary.outcomes == {"done": 2}
    assert waits == [AWAKE_SLEEP] * 3
