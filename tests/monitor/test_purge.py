"""Removed sources are purged, and nothing a live path holds ever is."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import IngestSettings, ingest_sources
from bucketdigest.monitor.catalog import Revision
from bucketdigest.monitor.purge import PurgeRule, purge, remove_document
from bucketdigest.monitor.status import collect_status
from bucketdigest.runner.listing import find_digest, list_files
from bucketdigest.shared import keys, queue
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.records import PurgeRun, Ticket
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.loop import Worker, WorkerSettings

NOW = PurgeRule(older_than=timedelta(0))


def _ingest(store: Store, folder: Path) -> dict[str, str]:
    report = ingest_sources(store, [str(folder)], IngestSettings())
    return {f.path: f.digest for f in report.files}


def _work(store: Store) -> None:
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        idle_sleep=0.1,
        digest=DigestSettings(converter=ConverterOptions(mode="legacy")),
    )
    Worker(store, settings).run()


def _objects(store: LocalStore, digest: str) -> list[str]:
    return sorted(
        str(path.relative_to(store.root))
        for path in store.root.rglob("*")
        if path.is_file() and digest in str(path)
    )


@pytest.fixture
def done(tmp_path: Path, pdf_folder: Path) -> tuple[LocalStore, dict[str, str]]:
    store = LocalStore(tmp_path / "bucket")
    digests = _ingest(store, pdf_folder)
    _work(store)
    return store, digests


def test_a_removed_file_is_recorded_then_purged_with_everything_of_it(
    done: tuple[LocalStore, dict[str, str]], pdf_folder: Path
) -> None:
    store, digests = done
    gone = digests["beta.pdf"]
    (pdf_folder / "beta.pdf").unlink()
    report = ingest_sources(store, [str(pdf_folder)], IngestSettings())
    assert [(r.path, r.digest) for r in report.run.removed] == [("beta.pdf", gone)]
    assert _objects(store, gone)

    waiting = purge(store, PurgeRule(older_than=timedelta(days=7)))
    assert waiting.purged == ()
    dry = purge(store, NOW, dry_run=True)
    assert dry.purged == (gone,) and _objects(store, gone)

    run = purge(store, NOW)
    assert run.purged == (gone,)
    assert _objects(store, gone) == []
    for path in ("alpha.pdf", "sub/gamma.pdf"):
        assert store.head(keys.out_key(digests[path])) is not None
    records = [i.key for i in store.list(keys.REGISTRY_RUNS_PREFIX)]
    purges = [
        PurgeRun.from_json(store.get(k).data).purged
        for k in records
        if keys.run_kind(k) is keys.RunKind.PURGE
    ]
    assert sorted(purges) == [(), (gone,)]  # the dry run is not recorded
    assert len(collect_status(store).runs) == 2  # ingest runs only
    assert purge(store, NOW).purged == ()  # the manifest forgot it


def test_a_path_deleted_and_re_added_before_the_purge_keeps_its_document(
    done: tuple[LocalStore, dict[str, str]], pdf_folder: Path, tmp_path: Path
) -> None:
    store, digests = done
    kept = tmp_path / "beta.pdf"
    shutil.move(pdf_folder / "beta.pdf", kept)
    _ingest(store, pdf_folder)
    shutil.move(kept, pdf_folder / "beta.pdf")
    _ingest(store, pdf_folder)
    assert purge(store, NOW).purged == ()
    assert store.head(keys.out_key(digests["beta.pdf"])) is not None


def test_a_document_another_path_still_holds_is_kept(
    done: tuple[LocalStore, dict[str, str]], pdf_folder: Path
) -> None:
    store, _ = done
    shutil.copy(pdf_folder / "beta.pdf", pdf_folder / "sub" / "beta-copy.pdf")
    _ingest(store, pdf_folder)
    (pdf_folder / "beta.pdf").unlink()
    _ingest(store, pdf_folder)
    run = purge(store, NOW)
    assert run.purged == ()
    assert [k.reason for k in run.kept] == [f"still at {pdf_folder} sub/beta-copy.pdf"]


def test_superseded_revisions_go_once_asked(
    done: tuple[LocalStore, dict[str, str]], pdf_folder: Path
) -> None:
    store, digests = done
    old = digests["alpha.pdf"]
    make_pdf(pdf_folder / "alpha.pdf", title="Alpha rules, second printing", pages=2, seed=9)
    new = _ingest(store, pdf_folder)["alpha.pdf"]
    assert Ticket.from_json(store.get(keys.queue_key(QueueState.TODO, new)).data).supersedes == old
    _work(store)
    with zipfile.ZipFile(io.BytesIO(store.get(keys.out_key(new)).data)) as result:
        assert json.loads(result.read("info.json"))["supersedes"] == old
    settings = StoreSettings(bucket=str(store.root))
    assert [e.digest for e in list_files(settings) if e.path == "alpha.pdf"] == [new]
    revisions = {e.digest: e.revision for e in list_files(settings, all_revisions=True)}
    assert (revisions[old], revisions[new]) == (Revision.SUPERSEDED, Revision.CURRENT)
    assert find_digest(settings, "alpha.pdf") == new
    assert purge(store, NOW).purged == ()
    assert purge(store, PurgeRule(timedelta(0), superseded=True)).purged == (old,)
    assert _objects(store, old) == []
    assert store.head(keys.out_key(new)) is not None


def test_a_document_being_processed_or_queued_is_not_purged(
    done: tuple[LocalStore, dict[str, str]], pdf_folder: Path
) -> None:
    store, digests = done
    gone = digests["beta.pdf"]
    (pdf_folder / "beta.pdf").unlink()
    _ingest(store, pdf_folder)
    ticket = Ticket(gone, "pdf", 1, ("beta.pdf",), store.now())
    held = queue.hold(store, ticket, "a-worker", 60)
    assert held is not None
    assert [k.reason for k in purge(store, NOW).kept] == ["being processed"]
    queue.release(store, gone, held.etag)
    queue.enqueue(store, ticket)
    assert [k.reason for k in purge(store, NOW).kept] == ["queued"]
    store.delete(keys.queue_key(QueueState.TODO, gone))
    assert purge(store, NOW).purged == (gone,)


def test_rm_removes_one_document_on_purpose(done: tuple[LocalStore, dict[str, str]]) -> None:
    store, digests = done
    run = remove_document(store, digests["alpha.pdf"])
    assert run.purged == (digests["alpha.pdf"],)
    assert _objects(store, digests["alpha.pdf"]) == []
    assert store.head(keys.out_key(digests["beta.pdf"])) is not None


def test_a_purge_killed_while_it_holds_a_document_leaves_it_as_it_was(
    done: tuple[LocalStore, dict[str, str]],
) -> None:
    import os
    import signal
    import subprocess
    import sys

    from bucketdigest.monitor.sweep import MonitorSettings, sweep

    store, digests = done
    digest = digests["alpha.pdf"]
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\n"
            "from pathlib import Path\n"
            "from bucketdigest.monitor import purge\n"
            "from bucketdigest.shared.stores.local import LocalStore\n"
            "purge._delete_document = lambda store, digest: os.kill(os.getpid(), signal.SIGKILL)\n"
            "store = LocalStore(Path(sys.argv[1]))\n"
            "purge.purge_document(store, sys.argv[2], 'purger', check_sources=False)\n",
            str(store.root),
            digest,
        ],
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    held = store.root / keys.queue_key(QueueState.PROCESSING, digest)
    assert held.is_file(), "the purge died holding the document"
    past = held.stat().st_mtime - 2 * 3600
    os.utime(held, (past, past))
    report = sweep(store, MonitorSettings())
    assert report.released == [digest] and report.requeued == report.dead_lettered == []
    assert queue.state_of(store, digest) == "done"
    assert store.head(keys.out_key(digest)) is not None
    _work(store)  # nothing is left for a worker to fail on
    assert collect_status(store).counts["failed"] == 0
