"""Following a folder: what is added, changed or removed there is ingested once it has settled.

A watcher (watchdog: the operating system's notifications, or polling on file systems that send
none, such as network mounts) notes that something in the folder changed; once nothing has
changed for the settle time (a file still being written or copied keeps changing), the folder
is ingested again as a normal scan: a new or changed file is uploaded and queued, a removed one
recorded as removed, a renamed one is the same document (same bytes, same hash). The first
scan, when the watch starts, catches up with what changed while nobody watched.

A scan hashes only what changed since the watch's last scan: a file whose size and
modification time are those it had when last hashed keeps its hash.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from bucketdigest.ingestor.ingest import Ingestor, IngestReport, IngestSettings
from bucketdigest.ingestor.sources import Candidate, FolderSource, NotYet
from bucketdigest.shared.errors import SourceError
from bucketdigest.shared.records import FileError
from bucketdigest.shared.store import Store

log = logging.getLogger(__name__)

SETTLE_SECONDS = 2.0
POLL_SECONDS = 1.0
"""How often a polling watcher looks at the folder."""
TICK_SECONDS = 0.2
"""How often the watch asks whether the folder has settled."""
_CHANGES = frozenset({"created", "modified", "moved", "deleted", "closed"})
"""Events that change the folder (not its files being opened or read, as a scan does)."""

Fingerprint = tuple[int, int]
"""A file's size and modification time (ns): unchanged, its bytes are taken as unchanged."""
Hashed = dict[str, tuple[Fingerprint, str]]
"""Per file (its path in the folder): its fingerprint when it was last hashed, and the hash."""


@dataclass(frozen=True)
class WatchSettings:
    settle_seconds: float = SETTLE_SECONDS
    poll: bool = False
    """Poll the folder instead of waiting for notifications (network mounts)."""
    clock: Callable[[], float] = time.time
    """Now, in seconds since the epoch: when a file was written (its modification time) is
    told against it, as is when the folder last changed."""


def _fingerprint(path: Path) -> Fingerprint | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


class _RememberingFolder(FolderSource):
    """A folder whose files keep the hash they had at the watch's last scan while their
    size and modification time are unchanged."""

    def __init__(
        self,
        root: Path,
        settings: IngestSettings,
        hashed: Hashed,
        ignored: Sequence[Path],
        watch: WatchSettings,
    ) -> None:
        super().__init__(root, settings.file_filter)
        self.settings = settings
        self.hashed = hashed
        self.ignored = ignored
        self.watch = watch
        self.seen: dict[str, Fingerprint] = {}
        """Each file's fingerprint as this scan found it, before reading it."""
        self.unsettled = False
        """Whether the scan left a file for later: written under ``settle_seconds`` ago."""

    def candidates(self) -> Iterator[Candidate | FileError | NotYet]:
        for item in super().candidates():
            if isinstance(item, FileError | NotYet):
                yield item
                continue
            if _inside(self.root / item.relative, self.ignored):
                continue
            seen = _fingerprint(self.root / item.relative)
            if seen is not None and self.watch.clock() - seen[1] / 1e9 < self.watch.settle_seconds:
                # still being written or copied (the scan at the start, or one that began as
                # a copy did): the next scan, once the folder has settled, takes it
                self.unsettled = True
                yield NotYet(item.relative)
                continue
            if seen is not None:
                self.seen[item.relative] = seen
            known = self.hashed.get(item.relative)
            if seen is not None and known is not None and known[0] == seen:
                item = dataclasses.replace(item, digest=known[1], size=seen[0])
            yield item


class _Changes(FileSystemEventHandler):
    """When the folder last changed, and whether it changed since the last scan began."""

    def __init__(self, clock: Callable[[], float], ignored: Sequence[Path]) -> None:
        self._clock = clock
        self._ignored = ignored
        self._lock = threading.Lock()
        self._pending = False
        self._last = 0.0

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _CHANGES:
            return
        paths = [os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or "")]
        if all(_inside(Path(p), self._ignored) for p in paths if p):
            return
        with self._lock:
            self._pending, self._last = True, self._clock()

    def again(self) -> None:
        """Count as changed now: a scan left a file for later."""
        with self._lock:
            self._pending, self._last = True, self._clock()

    def settled(self, seconds: float) -> bool:
        """Whether the folder changed and has not changed for ``seconds`` since; if so, the
        change counts as taken (a change during the scan that follows makes another)."""
        with self._lock:
            if self._pending and self._clock() - self._last >= seconds:
                self._pending = False
                return True
            return False


def check_folders(folders: Sequence[Path]) -> None:
    """SourceError naming the first of ``folders`` that is not a folder."""
    for folder in folders:
        if not folder.is_dir():
            raise SourceError(f"{folder}: not a folder (only folders can be watched)")


def _started(changes: _Changes, root: Path, poll: bool) -> BaseObserver:
    """A watcher of ``root`` (recursive), started: the system's notifications, or polling
    when asked or when the system refuses (inotify's limit on watches reached, say)."""
    if not poll:
        observer = Observer()
        try:
            observer.schedule(changes, str(root), recursive=True)
            observer.start()
            return observer
        except OSError as exc:
            log.warning(
                "%s: no file notifications (%s); polling every %g s", root, exc, POLL_SECONDS
            )
    observer = PollingObserver(timeout=POLL_SECONDS)
    observer.schedule(changes, str(root), recursive=True)
    observer.start()
    return observer


def watch_folder(
    store: Store,
    folder: Path,
    settings: IngestSettings,
    on_report: Callable[[IngestReport], None],
    stop: threading.Event,
    watch: WatchSettings = WatchSettings(),
    *,
    ignored: Sequence[Path] = (),
) -> None:
    """Ingest ``folder`` now, then again each time it has settled after a change (see the
    module), until ``stop`` is set. ``ignored``: folders inside it whose changes are not the
    documents' (a local bucket kept there)."""
    check_folders([folder])
    root = folder.resolve()
    hashed: Hashed = {}
    ignored = [path.resolve() for path in ignored]
    changes = _Changes(watch.clock, ignored)
    observer = _started(changes, root, watch.poll)  # first: what changes during the scan counts

    def scan() -> None:
        source = _RememberingFolder(root, settings, hashed, ignored, watch)
        on_report(_scan(store, source))
        if source.unsettled:
            changes.again()

    try:
        scan()
        while not stop.wait(TICK_SECONDS):
            if changes.settled(watch.settle_seconds):
                scan()
    finally:
        observer.stop()
        observer.join()


def _scan(store: Store, source: _RememberingFolder) -> IngestReport:
    """Ingest ``source``; it then remembers the hashes of the files it read."""
    report = Ingestor(store, priority=source.settings.priority).ingest([source])
    hashed = source.hashed
    hashed.clear()
    for file in report.files:
        if (seen := source.seen.get(file.path)) is not None:
            hashed[file.path] = (seen, file.digest)
    return report


def watch_folders(
    store: Store,
    folders: Sequence[Path],
    settings: IngestSettings,
    on_report: Callable[[Path, IngestReport], None],
    stop: threading.Event,
    watch: WatchSettings = WatchSettings(),
    *,
    ignored: Sequence[Path] = (),
) -> None:
    """:func:`watch_folder` for each of ``folders`` side by side, until ``stop`` is set (or
    one of them fails: its error is raised once the others have stopped)."""
    check_folders(folders)
    failed: list[BaseException] = []

    def follow(folder: Path) -> None:
        try:
            watch_folder(
                store,
                folder,
                settings,
                lambda report: on_report(folder, report),
                stop,
                watch,
                ignored=ignored,
            )
        except BaseException as exc:
            failed.append(exc)
            stop.set()

    threads = [threading.Thread(target=follow, args=(f,), daemon=True) for f in folders]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            for thread in threads:
                thread.join(timeout=0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if failed:
        raise failed[0]
