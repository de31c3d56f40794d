"""The damage drill: a bucket of done documents, then results, sources, markers and index files
truncated, deleted or garbled at random (seeded); search must keep answering for every document
left whole, ``status`` must name each damaged object, and the monitor's pass plus
``bucketdigest check`` must bring every document whose source survives back to done, with none
lost (``tests/test_damage_drill.py`` runs it and asserts each of these).

What is damaged, of the documents done: results cut short, garbled inside a member and deleted;
sources garbled (the folder they came from still has them, except one, whose copy is deleted
too) and deleted; the queue markers of documents not yet done garbled or deleted, and the dead
letter of a broken file garbled; one data file and one index file of the search index deleted.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bucketdigest.ingestor.ingest import Ingestor, default_cache_dir
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.monitor.loop import run_monitor
from bucketdigest.monitor.status import collect_status
from bucketdigest.monitor.sweep import MonitorSettings
from bucketdigest.runner.rerun import repair_bucket
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared import keys, queue
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.jsonlines import loads_lines
from bucketdigest.shared.keys import QueueState
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.result import CHUNKS, ResultZip, damage
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings

Phrases = dict[str, str]


@dataclass
class DrillReport:
    documents: int = 0
    damaged: dict[str, list[str]] = field(default_factory=dict)
    """What was done to which objects (kind → keys)."""
    searches: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Moment → (documents left whole a search found, documents left whole)."""
    listed: tuple[int, int] = (0, 0)
    """(damaged objects ``status`` names, damaged objects that need naming)."""
    mended_markers: int = 0
    remade: int = 0
    restored_sources: int = 0
    back_to_done: tuple[int, int] = (0, 0)
    """(documents done with a sound result at the end, documents whose source survived)."""
    lost: list[str] = field(default_factory=list)
    """Documents whose source and result were both damaged beyond repair (still listed)."""
    listed_at_the_end: list[str] = field(default_factory=list)
    """What ``status`` still names once everything repairable is repaired."""
    vanished: list[str] = field(default_factory=list)
    """Documents neither done nor failed at the end: must be none."""
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def _work(store: LocalStore) -> None:
    Worker(store, WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.05)).run()


def _phrases(store: LocalStore, digests: list[str]) -> Phrases:
    """Per document, words of its own first passage a keyword search finds it by."""
    found: Phrases = {}
    for digest in digests:
        with ResultZip(store.get(keys.out_key(digest)).data) as result:
            lines = loads_lines(result.text(CHUNKS))
        text = " ".join(chunk["text"] for chunk in lines[:2])
        words = sorted(set(re.findall(r"[^\W_]{7,}", text)), key=lambda w: (-len(w), w))
        if words:
            found[digest] = " ".join(words[:4])
    return found


def _answered(settings: StoreSettings, phrases: Phrases, whole: set[str]) -> tuple[int, int]:
    """(documents of ``whole`` a search for their words finds, documents asked for); a search
    that fails counts as not found."""
    hits = 0
    for digest in whole & set(phrases):
        request = SearchRequest(phrases[digest], mode=Mode.KEYWORD, limit=10)
        try:
            found = {hit.digest for hit in Searcher.open(settings).search(request)}
        except Exception:  # what a user would see as a failed search
            continue
        if digest in found:
            hits += 1
    return hits, len(whole & set(phrases))


def _garble(data: bytes, rng: random.Random) -> bytes:
    garbled = bytearray(data)
    start = rng.randrange(30, max(31, len(data) // 2))
    for i in range(start, min(len(data), start + 64)):
        garbled[i] ^= 0xA5
    return bytes(garbled)


def drill(
    sources: Path,
    bucket: Path,
    *,
    seed: int = 7,
    pending: Callable[[Path], list[Path]] | None = None,
) -> DrillReport:
    """Run the drill on the documents of ``sources`` (every file of every type; a file named
    ``broken.*`` is expected to fail) in a new local bucket at ``bucket``. ``pending`` makes
    the files ingested after the others and left unprocessed, whose markers are damaged."""
    started = time.perf_counter()
    rng = random.Random(seed)
    report = DrillReport()
    store = LocalStore(bucket)
    settings = StoreSettings(bucket=str(bucket))
    every = FileFilter(exts=EXTENSION_GROUPS["all"])
    ingested = Ingestor(store).ingest([FolderSource(sources, every)])
    paths = {f.digest: sources / f.path for f in ingested.files}
    _work(store)
    index_bucket(store, settings)
    done = sorted(d for d in paths if store.head(keys.out_key(d)) is not None)
    failed = [d for d in paths if queue.state_of(store, d) is DocState.FAILED]
    phrases = _phrases(store, done)
    waiting: list[str] = []
    if pending is not None:
        later = Ingestor(store).ingest([FolderSource(path, every) for path in pending(sources)])
        waiting = sorted({f.digest for f in later.files} - set(paths))
        paths.update({f.digest: Path(f.source) / f.path for f in later.files})
    report.documents = len(paths)

    # results, sources and markers
    chosen = rng.sample(done, k=min(len(done), 14))
    cut, garbled, deleted = chosen[0:3], chosen[3:5], chosen[5:7]
    bad_sources, gone_sources, lost = chosen[7:10], chosen[10:12], chosen[12:13]
    for digest in cut:
        data = store.get(keys.out_key(digest)).data
        store.put(keys.out_key(digest), data[: rng.randrange(len(data) // 4, len(data) // 2)])
    for digest in garbled:
        store.put(keys.out_key(digest), _garble(store.get(keys.out_key(digest)).data, rng))
    for digest in deleted:
        store.delete(keys.out_key(digest))
    raw = {d: next(store.list(keys.raw_prefix(d))).key for d in paths}
    for digest in bad_sources + lost:
        store.put(raw[digest], _garble(store.get(raw[digest]).data, rng))
    for digest in gone_sources:
        store.delete(raw[digest])
    for digest in lost:  # its folder copy is gone too, and its result is cut short
        paths[digest].unlink()
        data = store.get(keys.out_key(digest)).data
        store.put(keys.out_key(digest), data[: len(data) // 3])
    marker_damage: dict[str, str] = {}
    for n, digest in enumerate(waiting):
        key = keys.queue_key(QueueState.TODO, digest)
        if n % 2 == 0:
            store.put(key, b'{"digest": "broken')
            marker_damage[key] = "garbled"
        else:
            store.delete(key)
            marker_damage[key] = "deleted"
    for digest in failed:
        key = keys.queue_key(QueueState.FAILED, digest)
        store.put(key, b"\x00 not a dead letter")
        marker_damage[key] = "garbled"
    report.damaged = {
        "result cut short": [keys.out_key(d) for d in cut + lost],
        "result garbled": [keys.out_key(d) for d in garbled],
        "result deleted": [keys.out_key(d) for d in deleted],
        "source garbled": [raw[d] for d in bad_sources + lost],
        "source deleted": [raw[d] for d in gone_sources],
        "marker garbled": [k for k, how in marker_damage.items() if how == "garbled"],
        "marker deleted": [k for k, how in marker_damage.items() if how == "deleted"],
    }
    damaged_results = set(cut + garbled + lost)
    whole = set(done) - damaged_results - set(deleted)
    report.searches["after results, sources, markers"] = _answered(settings, phrases, whole)

    # index files
    tables = bucket / "index"
    data_files = sorted((tables / "chunks.lance" / "data").iterdir())
    index_folders = sorted((tables / "documents.lance" / "_indices").iterdir())
    lost_index = [rng.choice(data_files), rng.choice(index_folders)]
    for path in lost_index:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    report.damaged["index data file or index deleted"] = [
        p.relative_to(bucket).as_posix() for p in lost_index
    ]
    report.searches["with index files missing, before the indexer runs"] = _answered(
        settings, phrases, whole
    )
    index_bucket(store, settings)  # finds the files missing and rebuilds beside
    report.searches["after the indexer's next run"] = _answered(settings, phrases, whole)

    # the monitor's pass, then `bucketdigest check`
    passes = []
    run_monitor(store, MonitorSettings(), once=True, check_every=0, on_pass=passes.append)
    checked = passes[0].damage
    report.mended_markers = len(checked.mended) if checked else 0
    report.remade = len(checked.remade) if checked else 0
    needs_naming = set(report.damaged["result cut short"] + report.damaged["result garbled"])
    needs_naming |= set(report.damaged["source garbled"])
    named = set(collect_status(store).damaged)
    report.listed = (len(needs_naming & named), len(needs_naming))
    repaired = repair_bucket(store, default_cache_dir())
    report.restored_sources = len(repaired.restored)
    _work(store)  # the broken file, back in line with its dead letter rebuilt, fails again
    repair_bucket(store, default_cache_dir())  # a second lap sees the remade results whole
    index_bucket(store, settings)
    report.listed_at_the_end = sorted(collect_status(store).damaged)

    survivors = [d for d in paths if d not in lost]
    sound = [
        d
        for d in survivors
        if store.head(keys.out_key(d)) is not None
        and damage(store.get(keys.out_key(d)).data) is None
    ]
    expected = [d for d in survivors if d not in failed]
    report.back_to_done = (len(set(sound) & set(expected)), len(expected))
    report.lost = [d for d in lost if keys.out_key(d) in collect_status(store).damaged]
    for digest in paths:
        state = queue.state_of(store, digest)
        if state is DocState.FAILED:
            failure = queue.read_failure(store, digest)
            report.failed[digest] = failure.error if failure else "(dead letter unreadable)"
        elif state is not DocState.DONE:
            report.vanished.append(digest)
    report.searches["after the repair"] = _answered(settings, phrases, set(sound) & set(phrases))
    report.seconds = time.perf_counter() - started
    return report


def table(report: DrillReport) -> str:
    rows = [
        "| what | count |",
        "| --- | --- |",
        f"| documents in the bucket | {report.documents} |",
    ]
    for kind, damaged in report.damaged.items():
        rows.append(f"| {kind} | {len(damaged)} |")
    for moment, (found, whole) in report.searches.items():
        rows.append(f"| search found its document, {moment} | {found} of {whole} |")
    rows += [
        f"| damaged results and sources `status` named | "
        f"{report.listed[0]} of {report.listed[1]} |",
        f"| markers the monitor rebuilt | {report.mended_markers} |",
        f"| results the monitor sent to be made again | {report.remade} |",
        f"| sources `check` fetched again from their folder | {report.restored_sources} |",
        f"| documents back to done, of those whose source survived | "
        f"{report.back_to_done[0]} of {report.back_to_done[1]} |",
        f"| lost (source and result damaged, folder copy gone), still listed | "
        f"{len(report.lost)} |",
        f"| objects `status` names at the end | {len(report.listed_at_the_end)} |",
        f"| failed with their reason (broken or password-protected files) | {len(report.failed)} |",
        f"| vanished | {len(report.vanished)} |",
        f"| seconds | {report.seconds:.0f} |",
    ]
    return "\n".join(rows)


def run(quick: bool) -> str:
    """The drill on real documents (every fifth file of the corpus: 40 of its kinds) and a
    broken one, or on generated notes with ``quick``."""
    from realworld import corpus_files

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sources = root / "in"
        sources.mkdir()
        if quick:
            for n in range(32):
                (sources / f"note-{n:02d}.md").write_text(
                    f"# Note {n}\n\nThe quartermaster{n:02d} inventories provisions "
                    f"and ammunition for expedition number {n}.\n"
                )
        else:
            for n, (path, _) in enumerate(corpus_files(False, root / "gen")[::5][:40]):
                shutil.copyfile(path, sources / f"{n:03d}-{path.name}")
        (sources / "broken.pdf").write_bytes(b"%PDF-1.7 not a PDF at all")
        later = root / "later"
        later.mkdir()
        for n in range(4):
            (later / f"later-{n}.md").write_text(f"# Later {n}\n\nQueued, not yet done {n}.\n")
        report = drill(sources, root / "bucket", pending=lambda _: [later])
    return (
        f"A bucket of {report.documents} documents, then damage at random (seed 7); "
        "`python scripts/bench/run.py --only damage`.\n\n" + table(report)
    )
