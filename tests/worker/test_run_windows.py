"""Workers with run windows (an injected clock): outside the window they claim nothing and
say so in the bucket, inside it they work, and a job the window's end catches is handed back
after the grace."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.monitor.status import collect_status
from bucketdigest.shared import keys
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.waiting import wait_until

SETTINGS = WorkerSettings(
    exit_when_idle=True,
    monitor_every=None,
    idle_sleep=0.05,
    grace_seconds=60,
    run_window=("22:00Z-06:00Z",),
    digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_outside_its_window_a_worker_waits_and_says_so_then_works_inside_it(
    tmp_path: Path, pdf_folder: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    ingest_sources(store, [str(pdf_folder)], IngestSettings())
    clock = Clock(datetime(2026, 11, 26, 12, 0, tzinfo=UTC))
    worker = Worker(store, SETTINGS, worker_id="night-owl", clock=clock)
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.update(summary=worker.run()))
    thread.start()
    wait_until(lambda: collect_status(store).waiting, "the worker never said it waits")
    (note,) = collect_status(store).waiting
    assert note.worker_id == "night-owl" and note.windows == ("22:00Z-06:00Z",)
    assert note.opens_at == datetime(2026, 11, 26, 22, 0, tzinfo=UTC)
    # waiting for its window (its note says so), it claims nothing: the todo lane is whole
    assert collect_status(store).counts["todo"] == 3, "nothing is claimed outside the window"
    clock.now = datetime(2026, 11, 26, 23, 0, tzinfo=UTC)
    thread.join(timeout=300)
    assert outcome["summary"].outcomes == {"done": 3}  # type: ignore[attr-defined]
    assert collect_status(store).waiting == []
    assert store.head(keys.worker_key("night-owl")) is None


def test_a_job_the_window_end_catches_is_handed_back_after_the_grace(tmp_path: Path) -> None:
    clock = Clock(datetime(2026, 11, 26, 23, 0, tzinfo=UTC))
    worker = Worker(LocalStore(tmp_path / "bucket"), SETTINGS, clock=clock)
    assert worker._wait_for_window()
    clock.now = datetime(2026, 11, 27, 6, 0, 30, tzinfo=UTC)
    assert worker._shutdown_reason() is None, "within the grace the job may finish"
    clock.now = datetime(2026, 11, 27, 6, 1, 1, tzinfo=UTC)
    reason = worker._shutdown_reason()
    assert reason is not None and "run window closed at 06:00" in reason


def test_a_worker_without_windows_never_waits(tmp_path: Path) -> None:
    settings = replace(SETTINGS, run_window=())
    worker = Worker(LocalStore(tmp_path / "bucket"), settings)
    assert worker._wait_for_window() and worker._shutdown_reason() is None
