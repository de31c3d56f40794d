"""Speech: word error rate and speed of the default recogniser (pocketsphinx, offline, the US
English model its wheel ships) on sentences spoken by espeak-ng, in three containers."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import table
from rapidfuzz.distance import Levenshtein

from bucketdigest.shared.spoken import speak, transcode
from bucketdigest.worker.digesters.doc_to_markdown.speech import transcribe

SENTENCES = (
    "Roll initiative before the battle begins.",
    "The knight moves two squares forward and one square to the side.",
    "Each player draws five cards at the start of the game.",
    "The dragon guards the treasure in the mountain cave.",
    "A wizard may cast one spell each round.",
    "Farmers harvest the wheat at the end of summer.",
    "The ship sails north when the wind is strong.",
    "Keep your shield raised while you cross the bridge.",
    "The winner is the first player to reach ten points.",
    "Open the door slowly and listen for footsteps.",
)


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?").lower() for w in text.split() if w.strip(".,;:!?")]


def _heard(pages: list[str]) -> list[str]:
    lines = [line.split("] ", 1)[1] for page in pages for line in page.split("\n\n")[1:]]
    return _words(" ".join(lines))


def run(quick: bool) -> str:
    sentences = SENTENCES[:2] if quick else SENTENCES
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for ext in ("wav", "mp3", "webm"):
            errors = words = 0
            sound = spent = 0.0
            for n, sentence in enumerate(sentences):
                wav = speak(sentence, Path(scratch) / f"{n}.wav")
                source = wav if ext == "wav" else transcode(wav, Path(scratch) / f"{n}.{ext}")
                started = time.perf_counter()
                pages, about = transcribe(source)
                spent += time.perf_counter() - started
                sound += float(about["seconds"])  # type: ignore[arg-type]
                reference = _words(sentence)
                errors += Levenshtein.distance(reference, _heard(pages))
                words += len(reference)
            wer, speed = f"{errors / words:.2f}", f"{spent / sound:.2f}"
            rows.append((ext, len(sentences), words, wer, speed))
    return (
        "pocketsphinx (the default recogniser) on sentences spoken by espeak-ng (en-us, 150 "
        "words a minute), through the worker's own decoding and segmenting; word error rate "
        "(word-level edit distance over reference words) and real-time factor (seconds of "
        "recognition per second of sound):\n\n"
        + table(("container", "sentences", "words", "WER", "real-time factor"), rows)
        + "\n\nA synthetic voice is far from the speech pocketsphinx's model was trained on; "
        "human speech and a Whisper server (`--asr-endpoint`) do better. The server path is "
        "tested against a local fake (tests/worker/test_speech.py), not measured here.\n"
    )


if __name__ == "__main__":
    print(run(quick=False))
