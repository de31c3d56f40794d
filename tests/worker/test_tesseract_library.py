"""Images (drawn text, scanned pages) are read by Tesseract's library in the process, as the command
line reads them, without starting a process for each."""

from __future__ import annotations

import pymupdf
import pytest

from bucketdigest.worker import tesseract
from bucketdigest.worker.tesseract import read_image, read_pixmap, tessdata

LINE = "Quarterly yields of the turnip crop"


def _lettering(colorspace: pymupdf.Colorspace) -> pymupdf.Pixmap:
    doc = pymupdf.open()
    page = doc.new_page(width=360, height=40)
    page.insert_text((10, 28), LINE, fontsize=18, fontname="helv")
    return page.get_pixmap(matrix=pymupdf.Matrix(2, 2), colorspace=colorspace)


@pytest.mark.parametrize("colorspace", [pymupdf.csRGB, pymupdf.csGRAY], ids=["rgb", "grey"])
def test_a_region_is_read_in_the_process_as_the_command_line_reads_it(
    monkeypatch: pytest.MonkeyPatch, colorspace: pymupdf.Colorspace
) -> None:
    pixmap = _lettering(colorspace)
    by_command = read_image(pixmap.tobytes("png"), "eng", tessdata(), "tesseract", "region")

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Tesseract process was started")

    monkeypatch.setattr(tesseract.subprocess, "run", no_process)
    in_process = read_pixmap(pixmap, "eng", tessdata(), "tesseract", "region")

    assert in_process.trusted == LINE
    assert [w.text for w in in_process.words] == [w.text for w in by_command.words]


def test_without_the_library_the_command_line_reads_a_region(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tesseract, "_library", lambda language, tessdata: None)
    language_data = tessdata()  # found before counting: a cold cache runs --list-langs
    started = []
    run = tesseract.subprocess.run

    def counted(command: list[str], **kwargs: object) -> object:
        started.append(command)
        return run(command, **kwargs)

    monkeypatch.setattr(tesseract.subprocess, "run", counted)
    read = read_pixmap(_lettering(pymupdf.csRGB), "eng", language_data, "tesseract", "block")
    assert read.trusted == LINE
    assert len(started) == 1 and started[0][started[0].index("--psm") + 1] == "6"


def test_threads_reading_at_once_each_get_their_own_image_read() -> None:
    """The process's loaded Tesseract is shared: a library user converting in several threads
    must not get another thread's words."""
    from concurrent.futures import ThreadPoolExecutor

    lines = [f"Shipment number {n} left the harbour" for n in range(6)]

    def read(line: str) -> str:
        doc = pymupdf.open()
        page = doc.new_page(width=420, height=40)
        page.insert_text((10, 28), line, fontsize=18, fontname="helv")
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(2, 2))
        return read_pixmap(pixmap, "eng", tessdata(), "tesseract", "block").trusted

    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(read, lines)) == lines
