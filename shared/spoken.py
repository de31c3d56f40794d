"""Speech samples for the demo, tests and benchmarks: text spoken by espeak-ng (a system
package) and put in the containers users have (mp3, m4a, ogg, flac, opus; mp4, mkv, webm with
a picture track), with PyAV."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CONTAINERS = {
    # extension: (audio codec, video codec or None)
    "wav": ("pcm_s16le", None),
    "mp3": ("libmp3lame", None),
    "m4a": ("aac", None),
    "ogg": ("libopus", None),
    "opus": ("libopus", None),
    "flac": ("flac", None),
    "mp4": ("aac", "mpeg4"),
    "mkv": ("libopus", "mpeg4"),
    "webm": ("libopus", "libvpx"),
}


def speak(text: str, path: Path, *, speed: int = 150) -> Path:
    """``text`` spoken into a WAV file (espeak-ng's US English voice)."""
    command = shutil.which("espeak-ng")
    if command is None:
        raise FileNotFoundError("espeak-ng is not installed (scripts/system-packages.txt)")
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [command, "-v", "en-us", "-s", str(speed), "-w", str(path), text],
        check=True,
        capture_output=True,
    )
    return path


def transcode(wav: Path, path: Path) -> Path:
    """The sound of ``wav`` in the container ``path``'s extension names (see CONTAINERS)."""
    import av

    audio_codec, video_codec = CONTAINERS[path.suffix.lstrip(".")]
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(wav)) as source, av.open(str(path), "w") as out:
        rate = 48_000 if audio_codec == "libopus" else 44_100
        audio = out.add_stream(audio_codec, rate=rate)
        picture = None
        if video_codec is not None:
            picture = out.add_stream(video_codec, rate=1)
            picture.width, picture.height, picture.pix_fmt = 64, 48, "yuv420p"
        resampler = av.AudioResampler(format=audio.format.name, layout="mono", rate=rate)
        seconds = 0.0
        for frame in source.decode(audio=0):
            seconds = float(frame.time or 0) + frame.samples / frame.sample_rate
            for part in resampler.resample(frame):
                out.mux(audio.encode(part))
        for part in resampler.resample(None):
            out.mux(audio.encode(part))
        out.mux(audio.encode(None))
        if picture is not None:
            import numpy as np

            for second in range(int(seconds) + 1):
                image = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), "rgb24")
                image.pts = second
                out.mux(picture.encode(image.reformat(format="yuv420p")))
            out.mux(picture.encode(None))
    return path
