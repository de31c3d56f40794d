"""Speech in audio files and in the sound of video files, as a transcript with timestamps.

The sound is decoded by PyAV (its wheel bundles FFmpeg) to 16 kHz mono, one stretch at a time
(a two-hour recording is never held whole in memory), and recognised segment by segment: by an
OpenAI-compatible ``/v1/audio/transcriptions`` server (``--asr-endpoint``, e.g. a Whisper
server) when one is given, else, and whenever that fails, by pocketsphinx and the US English
model its wheel ships. Each page holds :data:`PAGE_SECONDS` of sound; each paragraph starts
with the ``[mm:ss]`` of its segment, so a search hit says where to listen.
"""

from __future__ import annotations

import io
import logging
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared.errors import PermanentDigestError

log = logging.getLogger(__name__)

RATE = 16_000
SEGMENT_SECONDS = 20
"""Sound recognised at once (a pause near the end of a segment would be a better cut; a fixed
length keeps memory and a transcription request bounded)."""
PAGE_SECONDS = 300
"""Sound per page of the transcript: five minutes."""
SILENCE = 120
"""Peak amplitude (of 32767) under which a segment is taken for silence and not recognised."""


@dataclass(frozen=True)
class Segment:
    start: float
    """Seconds from the beginning."""
    text: str


SECONDS_PER_UNIT = 10
"""A recording's size for its time limit: one "page" of ``--page-timeout`` per this many seconds
of sound (recognition runs at about a third of real time here)."""


def sound_units(source: Path) -> int:
    """How many time-limit units the sound of ``source`` takes (1 when it cannot say)."""
    import av

    try:
        with av.open(str(source)) as container:
            duration = (container.duration or 0) / 1_000_000
    except (av.error.FFmpegError, OSError):  # type: ignore[attr-defined]
        return 1
    return max(1, int(duration // SECONDS_PER_UNIT) + 1)


def stamp(seconds: float) -> str:
    """``[mm:ss]``, or ``[h:mm:ss]`` past an hour."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"[{hours}:{minutes:02d}:{secs:02d}]" if hours else f"[{minutes:02d}:{secs:02d}]"


def sound_segments(source: Path, start: float = 0.0) -> Iterator[tuple[float, bytes]]:
    """(start second, 16-bit mono PCM at 16 kHz) of each :data:`SEGMENT_SECONDS` of the first
    sound stream, from ``start`` on. PermanentDigestError for a file without sound or that
    cannot be read."""
    import av

    size = SEGMENT_SECONDS * RATE * 2
    skip: int | None = None if start else 0
    """Bytes of sound before ``start`` still to drop (known once the seek has landed)."""
    try:
        container = av.open(str(source))
    except (av.error.FFmpegError, OSError) as exc:  # type: ignore[attr-defined]
        raise PermanentDigestError(f"not a readable audio or video file: {exc}") from exc
    with container:
        if not container.streams.audio:
            raise PermanentDigestError("the file has no sound track")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        buffer = bytearray()
        offset = start
        if start:
            container.seek(int(start * 1_000_000))  # to the key frame at or before it
        try:
            for frame in container.decode(stream):
                if skip is None:  # the seek landed on a key frame at or before ``start``
                    landed = frame.time if frame.time is not None else start
                    skip = max(0, int((start - landed) * RATE)) * 2
                for out in resampler.resample(frame):
                    buffer += out.to_ndarray().tobytes()
                if skip:
                    dropped = min(skip, len(buffer))
                    del buffer[:dropped]
                    skip -= dropped
                while len(buffer) >= size:
                    yield offset, bytes(buffer[:size])
                    del buffer[:size]
                    offset += SEGMENT_SECONDS
            for out in resampler.resample(None):
                buffer += out.to_ndarray().tobytes()
        except av.error.FFmpegError as exc:  # type: ignore[attr-defined]
            if offset == 0 and not buffer:
                raise PermanentDigestError(f"the sound cannot be decoded: {exc}") from exc
            log.warning("the sound breaks off at %s: %s", stamp(offset), exc)
        if buffer:
            yield offset, bytes(buffer)


def _silent(pcm: bytes) -> bool:
    import numpy as np

    samples = np.frombuffer(pcm, dtype=np.int16)
    return samples.size == 0 or int(np.abs(samples.astype(np.int32)).max()) < SILENCE


class Pocketsphinx:
    """Offline recognition with the model the pocketsphinx wheel ships (US English)."""

    name = "pocketsphinx"

    def __init__(self) -> None:
        from pocketsphinx import Decoder

        self.decoder = Decoder(samprate=RATE, loglevel="FATAL")

    def __call__(self, pcm: bytes) -> str:
        self.decoder.start_utt()
        self.decoder.process_raw(pcm, full_utt=True)
        self.decoder.end_utt()
        hypothesis = self.decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""


class Endpoint:
    """An OpenAI-compatible transcription server; pocketsphinx reads what it fails on."""

    def __init__(self, url: str, model: str, api_key: str | None, fallback: Pocketsphinx) -> None:
        self.url = url.rstrip("/") + "/audio/transcriptions"
        self.model = model
        self.api_key = api_key
        self.fallback = fallback
        self.name = f"{model} at {url}"
        self.failures = 0

    def __call__(self, pcm: bytes) -> str:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            answer = httpx.post(
                self.url,
                headers=headers,
                data={"model": self.model, "response_format": "json"},
                files={"file": ("segment.wav", _wav(pcm), "audio/wav")},
                timeout=120,
            )
            answer.raise_for_status()
            return str(answer.json().get("text", "")).strip()
        except (httpx.HTTPError, ValueError) as exc:
            self.failures += 1
            log.warning("transcription server failed (%s); pocketsphinx reads the segment", exc)
            return self.fallback(pcm)


def _wav(pcm: bytes) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm)
    return buffer.getvalue()


def _page_text(number: int, lines: list[str], seconds: float) -> str:
    begin, end = number * PAGE_SECONDS, min(seconds, (number + 1) * PAGE_SECONDS)
    heading = f"## Transcript {stamp(begin)} to {stamp(end)}"
    return "\n\n".join([heading, *lines]) + "\n"


def _kept_pages(partial: Path | None) -> list[str]:
    """The pages an earlier attempt finished (``partial/page-NNNN.md``, from the first on)."""
    kept: list[str] = []
    while partial is not None and (page := partial / f"page-{len(kept) + 1:04d}.md").is_file():
        kept.append(page.read_text(encoding="utf-8"))
    return kept


def _keep(partial: Path | None, number: int, text: str) -> None:
    """Leave a finished page where the job's checkpoint takes it (written whole or not at all)."""
    if partial is None:
        return
    partial.mkdir(parents=True, exist_ok=True)
    scratch = partial / f".page-{number + 1:04d}.md.partial"
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(partial / f"page-{number + 1:04d}.md")


def transcribe(
    source: Path,
    endpoint: tuple[str, str, str | None] | None = None,
    partial: Path | None = None,
) -> tuple[list[str], dict[str, object]]:
    """The transcript's pages and what to record of it (recogniser, seconds, problems).
    ``endpoint``: (URL, model, API key) of a transcription server. ``partial``: where each
    finished page is left for the job's checkpoints; pages an earlier attempt left there are
    kept, and the sound is decoded from the first page missing (a long recording resumes as a
    long PDF does)."""
    local = Pocketsphinx()
    recognise: Pocketsphinx | Endpoint = local if endpoint is None else Endpoint(*endpoint, local)
    kept = _kept_pages(partial)
    pages: list[list[str]] = [[] for _ in kept]
    seconds = len(kept) * PAGE_SECONDS
    spoken = any(len(page.split("\n\n")) > 1 for page in kept)

    # a page per PAGE_SECONDS of sound, each kept as soon as it is complete
    for start, pcm in sound_segments(source, start=len(kept) * PAGE_SECONDS):
        number = int(start // PAGE_SECONDS)
        while len(pages) <= number:
            if len(pages) > len(kept):  # the page before is complete
                _keep(partial, len(pages) - 1, _page_text(len(pages) - 1, pages[-1], seconds))
            pages.append([])
        seconds = start + len(pcm) / (2 * RATE)
        text = "" if _silent(pcm) else " ".join(recognise(pcm).split())
        if text:
            pages[number].append(f"{stamp(start)} {text}")
            spoken = True

    # what to record of it
    problems = []
    if not spoken:
        problems.append("no speech was recognised (silence, music, or another language)")
    if isinstance(recognise, Endpoint) and recognise.failures:
        problems.append(
            f"the transcription server failed on {recognise.failures} segment(s); "
            "pocketsphinx read them"
        )
    texts = [
        kept[number] if number < len(kept) else _page_text(number, lines, seconds)
        for number, lines in enumerate(pages or [[]])
    ]
    about = {"recogniser": recognise.name, "seconds": round(seconds, 1), "problems": problems}
    return texts, about
