"""Speech in audio and video files, through a real worker: spoken by espeak-ng, put in the
containers users have, transcribed with timestamps by pocketsphinx (or a transcription server,
faked here), searchable; silence and damaged files get clear answers."""

from __future__ import annotations

import json
import threading
import wave
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.search.request import Mode, SearchRequest
from bucketdigest.shared import keys
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.records import Failure
from bucketdigest.shared.result import ResultZip, page_member
from bucketdigest.shared.spoken import speak, transcode
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digesters.doc_to_markdown.speech import SEGMENT_SECONDS, sound_segments
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.search.conftest import digest_folder

SAID = "Roll initiative before the battle begins. The knight moves two squares forward."
CONTAINERS = ("wav", "mp3", "ogg", "m4a", "mp4", "webm")


def _transcript(store: LocalStore, digest: str) -> str:
    with ResultZip(store.get(keys.out_key(digest)).data) as result:
        return result.text(page_member(1))


@pytest.fixture(scope="module")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return speak(SAID, tmp_path_factory.mktemp("speech") / "said.wav", speed=130)


def test_speech_in_every_container_becomes_a_searchable_transcript(
    spoken: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    for ext in CONTAINERS:
        transcode(spoken, folder / f"said.{ext}")
    store = LocalStore(tmp_path / "bucket")
    digests = digest_folder(store, folder)
    heard = {}
    for ext in CONTAINERS:
        text = _transcript(store, digests[f"said.{ext}"])
        assert text.startswith("## Transcript [00:00] to [00:0"), ext
        line = text.split("\n\n")[1]
        # pocketsphinx hears espeak's voice poorly (scripts/bench/speech.py), but it hears words
        assert line.startswith("[00:00] ") and len(line.split()) >= 4, (ext, text)
        heard[ext] = max(line.split()[1:], key=len)
    settings = StoreSettings(bucket=str(store.root))
    index_bucket(store, settings)
    searcher = Searcher.open(settings)
    for ext, word in heard.items():
        # the containers often hold the same transcript, which a search shows once (repeats):
        # each document is asked on its own
        digest = digests[f"said.{ext}"]
        hits = searcher.search(SearchRequest(word, mode=Mode.KEYWORD, document=digest))
        assert hits[0].names == (f"said.{ext}",)
        assert hits[0].page == 1 and "[00:00]" in hits[0].snippet.text
    everywhere = searcher.search(SearchRequest(heard["wav"], mode=Mode.KEYWORD, limit=20))
    assert sum(1 + h.repeats for h in everywhere) >= len(CONTAINERS)


def test_long_sound_comes_in_segments_each_with_its_time(spoken: Path, tmp_path: Path) -> None:
    long = tmp_path / "long.wav"
    with wave.open(str(spoken)) as source:
        frames, params = source.readframes(source.getnframes()), source.getparams()
    with wave.open(str(long), "wb") as out:
        out.setparams(params)
        for _ in range(12):  # about a minute
            out.writeframes(frames)
    starts = [start for start, _ in sound_segments(long)]
    assert starts == [n * SEGMENT_SECONDS for n in range(len(starts))] and len(starts) >= 3


def test_silence_is_an_empty_transcript_with_a_problem_and_noise_a_clear_failure(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    with wave.open(str(folder / "quiet.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"\0\0" * 16_000 * 3)
    (folder / "broken.mp3").write_bytes(b"ID3 this is not sound at all" * 50)
    store = LocalStore(tmp_path / "bucket")
    from bucketdigest.ingestor.ingest import Ingestor
    from bucketdigest.ingestor.scan import FileFilter
    from bucketdigest.ingestor.sources import FolderSource

    report = Ingestor(store).ingest(
        [FolderSource(folder, FileFilter(exts=EXTENSION_GROUPS["audio"]))]
    )
    digests = {f.path: f.digest for f in report.files}
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    assert Worker(store, settings).run().outcomes == {"done": 1, "failed": 1}
    with ResultZip(store.get(keys.out_key(digests["quiet.wav"])).data) as result:
        assert result.info()["problems"] == [
            "no speech was recognised (silence, music, or another language)"
        ]
    failure = Failure.from_json(
        store.get(keys.queue_key(keys.QueueState.FAILED, digests["broken.mp3"])).data
    )
    assert "not a readable audio or video file" in failure.error
    assert not failure.retryable


@pytest.fixture
def transcriber() -> Iterator[tuple[str, list[int]]]:
    """A fake OpenAI-compatible transcription server; its list holds the statuses to answer
    with (200 when empty)."""
    statuses: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            body = self.rfile.read(length)
            assert self.path == "/v1/audio/transcriptions" and b"segment.wav" in body
            status = statuses.pop(0) if statuses else 200
            answer = json.dumps({"text": "Roll initiative before the battle begins."}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", statuses
    server.shutdown()


def test_a_transcription_server_reads_the_speech_and_pocketsphinx_stands_in_when_it_fails(
    spoken: Path, tmp_path: Path, transcriber: tuple[str, list[int]]
) -> None:
    from bucketdigest.ingestor.ingest import Ingestor
    from bucketdigest.ingestor.scan import FileFilter
    from bucketdigest.ingestor.sources import FolderSource

    url, statuses = transcriber
    store = LocalStore(tmp_path / "bucket")
    settings = WorkerSettings(
        exit_when_idle=True,
        monitor_every=None,
        idle_sleep=0.1,
        digest=DigestSettings(asr_endpoint=url, asr_model="whisper-1"),
    )

    def digest_one(name: str) -> str:
        folder = tmp_path / name.split(".")[0]
        transcode(spoken, folder / name)
        audio = FileFilter(exts=EXTENSION_GROUPS["audio"])
        report = Ingestor(store).ingest([FolderSource(folder, audio)])
        assert Worker(store, settings).run().outcomes == {"done": 1}
        return report.files[0].digest

    ok = digest_one("ok.mp3")
    assert "[00:00] Roll initiative before the battle begins." in _transcript(store, ok)
    statuses.extend([500] * 50)  # the server is down from now on
    down = digest_one("down.ogg")
    with ResultZip(store.get(keys.out_key(down)).data) as result:
        assert "[00:00] " in result.text(page_member(1))
        assert result.info()["converter"]["name"] == "whisper-1 at " + url
        assert any("pocketsphinx read them" in p for p in result.info()["problems"])


def test_a_long_recording_resumes_from_the_pages_an_earlier_attempt_finished(
    spoken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bucketdigest.worker.digesters.doc_to_markdown import speech

    monkeypatch.setattr(speech, "PAGE_SECONDS", 20)
    long = tmp_path / "long.wav"
    with wave.open(str(spoken)) as source:
        frames, params = source.readframes(source.getnframes()), source.getparams()
    with wave.open(str(long), "wb") as out:
        out.setparams(params)
        for _ in range(8):  # 44 s: three pages of 20 s
            out.writeframes(frames)
    partial = tmp_path / "partial"
    first, _ = speech.transcribe(long, partial=partial)
    assert len(first) >= 3
    assert sorted(p.name for p in partial.iterdir()) == [
        f"page-{n:04d}.md" for n in range(1, len(first))
    ], "every page but the last is left for the checkpoint as soon as it is done"
    (partial / "page-0001.md").write_text("## Transcript [00:00] to [00:20]\n\nkept\n")
    (partial / f"page-{len(first) - 1:04d}.md").unlink()
    calls: list[int] = []
    original = speech.sound_segments

    def counted(source: Path, start: float = 0.0):  # type: ignore[no-untyped-def]
        calls.append(int(start))
        return original(source, start)

    monkeypatch.setattr(speech, "sound_segments", counted)
    again, _ = speech.transcribe(long, partial=partial)
    assert calls == [20 * (len(first) - 2)], "decoding starts at the first page not kept"
    assert again[0].endswith("kept\n") and again[1:] == first[1:]
