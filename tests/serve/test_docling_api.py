"""docling-serve's v1 API, spoken to by its real clients: docling's own ``DoclingServiceClient``
(a file and a URL, through the async routes and polling; the answer a parsed DoclingDocument),
the request Open WebUI's Docling engine sends, and bad input in docling-serve's error shape;
a file sent again is answered from its stored result with no worker anywhere."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import httpx
import pymupdf
import pytest
from docling.service_client import DoclingServiceClient, StatusWatcherKind
from docling.service_client.client import ChunkerKind
from docling_core.transforms.chunker import HierarchicalChunker
from docling_core.types.doc import DocItemLabel, DoclingDocument

from bucketdigest.runner.bucket import Bucket
from bucketdigest.serve import docling_chunking
from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.serve.docling_chunking import ChunkerChoice
from bucketdigest.serve.docling_tasks import MAX_TASK_DOCUMENTS, Task, UnknownTask
from bucketdigest.shared import keys
from bucketdigest.shared.bucket_settings import change_settings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token
from tests.documents import mislayered_pdf, scanned_pdf
from tests.serve.conftest import Fleet

CLI = [sys.executable, "-m", "bucketdigest"]
SERVER_TOKEN = "s" * 24


def test_the_docling_client_converts_a_file_into_a_docling_document(
    fleet: Fleet,
) -> None:
    pdf = make_pdf(fleet.folder / "rules.pdf", title="Docling Rules", pages=2, seed=71)
    with DoclingServiceClient(
        fleet.url, api_key=fleet.token, status_watcher=StatusWatcherKind.POLLING, job_timeout=240
    ) as client:
        assert client.health().status == "ok"
        converted = client.convert(pdf)
    document = converted.document
    assert isinstance(document, DoclingDocument)
    assert "Docling Rules" in document.export_to_markdown()
    assert {p for p in document.pages} == {1, 2}
    located = [t for t in document.texts if t.prov]
    assert located and all(t.prov[0].page_no in (1, 2) for t in located)
    assert any(t.label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER) for t in document.texts)


def test_the_docling_client_converts_a_url_once_the_bucket_allows_its_network(
    fleet: Fleet,
) -> None:
    """The local server stands for a page on the fleet's own network: refused, unfetched and
    unstored (a 400 naming why) until the bucket allows private networks."""
    site = fleet.folder / "site"
    pdf = make_pdf(site / "manual.pdf", title="Served Manual", pages=1, seed=72)
    raw = keys.raw_key(hashlib.sha256(pdf.read_bytes()).hexdigest(), "pdf")
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/manual.pdf"
    store = LocalStore(fleet.folder / "bucket")
    try:
        refused = httpx.post(
            f"{fleet.url}/v1/convert/source",
            json={"sources": [{"kind": "http", "url": url}]},
            headers={"X-Api-Key": fleet.token},
        )
        assert refused.status_code == 400
        assert refused.json()["detail"].count(url) == 1, "the URL named once"
        assert "loopback" in refused.json()["detail"]
        assert "fetch_private_networks" in refused.json()["detail"]
        assert asked == []
        assert store.head(raw) is None
        change_settings(store, {"fetch_private_networks": True})
        with DoclingServiceClient(
            fleet.url,
            api_key=fleet.token,
            status_watcher=StatusWatcherKind.POLLING,
            job_timeout=240,
        ) as client:
            converted = client.convert(url)
    finally:
        change_settings(store, {"fetch_private_networks": None})
        server.shutdown()
    assert asked == ["/manual.pdf"] and store.head(raw) is not None
    assert "Served Manual" in converted.document.export_to_markdown()


def test_what_open_webui_sends_gets_the_markdown_back(fleet: Fleet) -> None:
    pdf = make_pdf(fleet.folder / "webui.pdf", title="Open WebUI Upload", pages=1, seed=73)
    with open(pdf, "rb") as handle:
        answer = httpx.post(
            f"{fleet.url}/v1/convert/file",
            files={"files": (pdf.name, handle, "application/pdf")},
            data={
                "image_export_mode": "placeholder",
                "table_mode": "accurate",
                "do_ocr": "true",
                "force_ocr": "false",
                "ocr_engine": "tesseract",
                "ocr_lang": ["en"],
                "pdf_backend": "dlparse_v4",
                "do_picture_description": "false",
                "picture_description_mode": "local",
            },
            headers={"X-Api-Key": fleet.token},
            timeout=240,
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "success" and body["errors"] == []
    assert "Open WebUI Upload" in body["document"]["md_content"]
    assert body["document"]["filename"] == "webui.pdf"
    assert isinstance(body["processing_time"], float)


def _convert(fleet: Fleet, pdf: Path, **options: str | list[str]) -> dict:
    """docling-serve's answer for ``pdf`` sent with ``options``, its status checked."""
    answer = httpx.post(
        f"{fleet.url}/v1/convert/file",
        files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
        data={"to_formats": ["md", "json"], **options},
        headers={"X-Api-Key": fleet.token},
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "success", answer.json()["errors"]
    return answer.json()["document"]


def _info(fleet: Fleet, pdf: Path) -> dict:
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    with zipfile.ZipFile(fleet.folder / "bucket" / "store" / "out" / f"{digest}.zip") as result:
        return json.loads(result.read("info.json"))


def test_force_ocr_reads_the_page_and_leaves_a_bad_text_layer_aside(fleet: Fleet) -> None:
    pdf = mislayered_pdf(fleet.folder / "mislayered.pdf", "Unicorns sing at dawn by the lake.")
    as_layered = _convert(fleet, pdf, force_ocr="false")
    assert "Unicorns sing" in as_layered["md_content"], "the text layer is the page's text"

    forced = _convert(fleet, pdf, force_ocr="true")
    assert "Dragons breathe fire" in forced["md_content"]
    assert "Unicorns" not in forced["md_content"]
    document = DoclingDocument.model_validate(forced["json_content"])
    located = [t for t in document.texts if "Dragons" in t.text and t.prov]
    assert located, "the OCR words locate the text on the page"
    provenance = _info(fleet, pdf)["provenance"]
    assert provenance["document_settings"] == {"force_ocr": True}
    assert provenance["chain_settings"]["force_ocr"] is True

    again = _convert(fleet, pdf, force_ocr="true")
    assert again["md_content"] == forced["md_content"]
    assert _info(fleet, pdf)["provenance"]["converted_at"] == provenance["converted_at"], (
        "a result made as asked is answered as it is"
    )


def test_do_ocr_false_and_include_images_false_shape_the_answer(fleet: Fleet) -> None:
    scan = scanned_pdf(fleet.folder / "scan.pdf")
    assert "Dragons breathe fire" in _convert(fleet, scan)["md_content"]
    unread = _convert(fleet, scan, do_ocr="false")
    assert "Dragons" not in unread["md_content"]
    assert not DoclingDocument.model_validate(unread["json_content"]).texts

    pictured = mislayered_pdf(fleet.folder / "pictured.pdf", "A page with its picture.")
    embedded = _convert(fleet, pictured, image_export_mode="embedded")
    assert "data:image/png;base64," in embedded["md_content"]
    left_out = _convert(fleet, pictured, image_export_mode="embedded", include_images="false")
    assert "A page with its picture." in left_out["md_content"]
    assert "data:image" not in left_out["md_content"]
    assert "<!-- image -->" in left_out["md_content"]


def test_ocr_lang_converts_a_read_page_again_in_the_language_asked(fleet: Fleet) -> None:
    pdf = scanned_pdf(fleet.folder / "german.pdf", body="Drachen speien Feuer einmal pro Runde.")
    first = _convert(fleet, pdf)
    assert "Drachen" in first["md_content"]
    assert _info(fleet, pdf)["provenance"]["chain_settings"]["ocr_language"] == "eng"

    german = _convert(fleet, pdf, ocr_lang=["de-DE", "en"])
    assert "Drachen" in german["md_content"]
    info = _info(fleet, pdf)
    assert info["provenance"]["document_settings"] == {"ocr_language": "deu+eng"}
    assert info["provenance"]["chain_settings"]["ocr_language"] == "deu+eng"
    installed = Path(pymupdf.get_tessdata())
    if not (installed / "deu.traineddata").is_file():
        assert any("no data for deu" in p for p in info["problems"]), info["problems"]

    unknown = httpx.post(
        f"{fleet.url}/v1/convert/file",
        files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
        data={"ocr_lang": ["klingon-xx"]},
        headers={"X-Api-Key": fleet.token},
    )
    assert unknown.status_code == 400 and "not a language tag" in unknown.json()["detail"]


def test_bad_input_is_answered_in_docling_serves_shape(fleet: Fleet) -> None:
    key = {"X-Api-Key": fleet.token}
    exe = httpx.post(
        f"{fleet.url}/v1/convert/file", files={"files": ("tool.exe", b"MZ")}, headers=key
    )
    assert exe.status_code == 415 and "no digester handles .exe" in exe.json()["detail"]
    broken = httpx.post(
        f"{fleet.url}/v1/convert/file",
        files={"files": ("broken.pdf", b"%PDF-1.7 not a PDF at all")},
        headers=key,
        timeout=240,
    )
    assert broken.status_code == 200, broken.text
    assert broken.json()["status"] == "failure"
    assert broken.json()["errors"][0]["error_message"]
    anonymous = httpx.post(f"{fleet.url}/v1/convert/file", files={"files": ("a.pdf", b"%PDF-")})
    assert anonymous.status_code == 401
    unknown = httpx.get(f"{fleet.url}/v1/result/bd1.nonsense-task")
    assert unknown.status_code == 404
    source = {"kind": "file", "filename": "a.pdf", "base64_string": "JVBERi0="}
    for pages, reason in [
        ([1, 1e999], "two page numbers"),  # JSON's infinity: no whole number
        ([1.5, 2], "two page numbers"),
        ([True, 2], "two page numbers"),
        ([1, 2, 3], "two page numbers"),
        (5, "two page numbers"),
        ([5, 2], "starts at page 5, after its last, 2"),
    ]:
        refused = httpx.post(
            f"{fleet.url}/v1/convert/source/async",
            content=json.dumps({"options": {"page_range": pages}, "sources": [source]}),
            headers=key | {"Content-Type": "application/json"},
        )
        assert refused.status_code == 400, (pages, refused.text)
        assert reason in refused.json()["detail"]


def test_a_file_sent_again_is_answered_from_its_result_with_no_worker(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "again.pdf", title="Sent Twice", pages=1, seed=74)
    bucket = Bucket(tmp_path / "bucket")
    bucket.upload(pdf)
    assert bucket.work().outcomes == {"done": 1}
    token, _ = add_token(bucket.store, "again", (Scope.UPLOAD,))
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path / "bucket")),
        port=0,
        token=SERVER_TOKEN,
        sync_wait=5,
    )
    with background_server(settings) as url, open(pdf, "rb") as handle:
        answer = httpx.post(
            f"{url}/v1/convert/file",
            files={"files": ("again.pdf", handle, "application/pdf")},
            data={"to_formats": ["md", "json"]},
            headers={"X-Api-Key": token},
        )
    assert answer.status_code == 200, answer.text
    document = answer.json()["document"]
    assert "Sent Twice" in document["md_content"]
    assert DoclingDocument.model_validate(document["json_content"]).name == "again"
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    assert not os.path.exists(tmp_path / "bucket" / "queue" / "todo" / digest)


def test_a_result_is_a_docling_document_by_the_api_the_library_and_get(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "chunked.pdf", title="Chunked Rules", pages=3, seed=75)
    bucket = Bucket(tmp_path / "bucket")
    bucket.upload(pdf)
    assert bucket.work().outcomes == {"done": 1}
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    settings = ServeSettings(store=StoreSettings(bucket=str(tmp_path / "bucket")), port=0)
    with background_server(settings) as url:
        served = httpx.get(f"{url}/api/documents/{digest[:12]}/docling")
    assert served.status_code == 200
    document = DoclingDocument.model_validate_json(served.text)
    assert document.tables, "the sample's table keeps its cell grid"
    assert document.tables[0].data.num_rows >= 2 and document.tables[0].data.num_cols >= 2
    chunks = list(HierarchicalChunker().chunk(document))
    assert chunks and any(
        "Chunked Rules" in " ".join(c.meta.headings or []) + c.text for c in chunks
    )
    assert all(item.prov for c in chunks for item in c.meta.doc_items if item.prov is not None)

    written = subprocess.run(
        [
            *CLI,
            "get",
            digest,
            "--format",
            "docling",
            "-o",
            str(tmp_path / "out"),
            "--bucket",
            str(tmp_path / "bucket"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    saved = DoclingDocument.model_validate_json(
        (tmp_path / "out" / "document.docling.json").read_text()
    )
    assert saved.export_to_markdown() == document.export_to_markdown()


def test_a_sync_conversion_outlasting_its_wait_is_a_504_and_stays_queued(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    token, _ = add_token(store, "slow", (Scope.UPLOAD,))
    pdf = make_pdf(tmp_path / "waits.pdf", title="Nobody Works", pages=1, seed=76)
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path / "bucket")),
        port=0,
        token=SERVER_TOKEN,
        sync_wait=1,
    )
    with background_server(settings) as url:
        answer = httpx.post(
            f"{url}/v1/convert/file",
            files={"files": ("waits.pdf", pdf.read_bytes(), "application/pdf")},
            headers={"X-Api-Key": token},
            timeout=60,
        )
    assert answer.status_code == 504
    assert "taking too long" in answer.json()["detail"]
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    assert (tmp_path / "bucket" / "queue" / "todo" / digest).exists()


def test_base64_sources_and_several_files_are_answered_as_docling_serve_does(
    fleet: Fleet,
) -> None:
    first = make_pdf(fleet.folder / "first.pdf", title="First Inline", pages=2, seed=78)
    notes = fleet.folder / "inline.md"
    notes.write_text("# Inline notes\n\nThe weir holds the river back.\n")
    key = {"X-Api-Key": fleet.token}
    answer = httpx.post(
        f"{fleet.url}/v1/convert/source",
        json={
            "options": {"to_formats": ["md", "text", "html"], "page_range": [2, 2]},
            "sources": [
                {
                    "kind": "file",
                    "filename": "first.pdf",
                    "base64_string": base64.b64encode(first.read_bytes()).decode(),
                }
            ],
        },
        headers=key,
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    document = answer.json()["document"]
    assert document["filename"] == "first.pdf"
    assert "First Inline" not in document["md_content"], "page 1 (its title) was not asked for"
    assert document["text_content"] and "<h" not in document["text_content"]
    assert document["html_content"].startswith("<!doctype html>")

    with open(first, "rb") as pdf, open(notes, "rb") as md:
        both = httpx.post(
            f"{fleet.url}/v1/convert/file",
            files=[("files", ("first.pdf", pdf)), ("files", ("inline.md", md))],
            headers=key,
            timeout=300,
        )
    assert both.status_code == 200 and both.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(both.content)) as archive:
        assert sorted(archive.namelist()) == ["first.md", "inline.md"]
        assert "The weir holds the river back." in archive.read("inline.md").decode()


def test_a_task_id_names_what_it_holds_and_nothing_else_parses() -> None:
    digests = tuple(hashlib.sha256(str(n).encode()).hexdigest() for n in range(MAX_TASK_DOCUMENTS))
    names = tuple(f"{'folder/' * 20}file-{n}.pdf" for n in range(MAX_TASK_DOCUMENTS))
    task = Task(digests, names, ("md", "json"), "embedded", (2, 5), zipped=True)
    parsed = Task.parse(task.task_id)
    assert dataclasses.replace(parsed, started=task.started) == task
    assert abs(parsed.started - task.started) < 0.001
    chunking = dataclasses.replace(task, chunking=ChunkerChoice("hierarchical", raw_text=True))
    assert Task.parse(chunking.task_id).chunking == chunking.chunking
    fields = json.loads(base64.urlsafe_b64decode(task.task_id[4:] + "==="))
    before = "bd1." + base64.urlsafe_b64encode(json.dumps(fields[:10]).encode()).decode()
    assert Task.parse(before.rstrip("=")).digests == digests, "an id given out before chunking"
    forged = Task(("not-a-hash",), ("a.pdf",)).task_id
    for bad in ("", "bd1.", "bd1.!!!!!!!!!", "bd1.AAAAAAAAAAAA", forged, "x" * 300):
        with pytest.raises(UnknownTask):
            Task.parse(bad)


def test_the_docling_client_chunks_a_document_with_either_chunker(fleet: Fleet) -> None:
    """``DoclingServiceClient.chunk`` (the file routes) and a JSON source request: chunks of
    the document by docling-core's chunkers, the hybrid one counting all-MiniLM-L6-v2's word
    pieces offline."""
    pdf = make_pdf(fleet.folder / "chunky.pdf", title="Chunky Rules", pages=3, seed=79)
    with DoclingServiceClient(
        fleet.url, api_key=fleet.token, status_watcher=StatusWatcherKind.POLLING, job_timeout=240
    ) as client:
        hybrid = client.chunk(pdf, chunker=ChunkerKind.HYBRID)
        hierarchical = client.chunk(pdf, chunker=ChunkerKind.HIERARCHICAL)
    assert hybrid.chunks and hierarchical.chunks
    assert len(hierarchical.chunks) > len(hybrid.chunks), "hybrid merges small peers"
    assert all(c.num_tokens and c.num_tokens <= 256 for c in hybrid.chunks)
    assert all(c.num_tokens is None for c in hierarchical.chunks)
    assert {p for c in hybrid.chunks for p in c.page_numbers or []} == {1, 2, 3}
    assert any(c.headings and "Chunky Rules" in c.headings for c in hybrid.chunks)
    assert [c.chunk_index for c in hybrid.chunks] == list(range(len(hybrid.chunks)))
    assert hybrid.documents[0].status == "success"
    words = " ".join(c.text for c in hierarchical.chunks)
    assert all(w in words for w in _first_words(pdf))

    key = {"X-Api-Key": fleet.token}
    source = {"kind": "file", "filename": "chunky.pdf"}
    source["base64_string"] = base64.b64encode(pdf.read_bytes()).decode()
    answer = httpx.post(
        f"{fleet.url}/v1/chunk/hybrid/source",
        json={
            "sources": [source],
            "chunking_options": {"max_tokens": 64, "include_raw_text": True},
            "include_converted_doc": True,
        },
        headers=key,
        timeout=240,
    )
    assert answer.status_code == 200, answer.text
    small = answer.json()
    assert all(c["num_tokens"] <= 64 and c["raw_text"] for c in small["chunks"])
    assert len(small["chunks"]) > len(hybrid.chunks)
    document = DoclingDocument.model_validate(small["documents"][0]["content"]["json_content"])
    assert "Chunky Rules" in document.export_to_markdown()
    for options, reason in [
        ({"tokenizer": "Qwen/Qwen3-Embedding-0.6B"}, "would be fetched from a hub"),
        ({"max_tokens": 0}, "max_tokens is 1 to"),
        ({"max_tokens": "9" * 5000}, "max_tokens is a whole number"),  # past int()'s digits
        ({"merge_peers": "maybe"}, "merge_peers is true or false"),
    ]:
        refused = httpx.post(
            f"{fleet.url}/v1/chunk/hybrid/source",
            json={"sources": [source], "chunking_options": options},
            headers=key,
        )
        assert refused.status_code == 400 and reason in refused.json()["detail"], refused.text
    unknown = httpx.post(
        f"{fleet.url}/v1/chunk/semantic/source", json={"sources": [source]}, headers=key
    )
    assert unknown.status_code == 404


def _first_words(pdf: Path) -> list[str]:
    """The first words of each page's text layer."""
    with pymupdf.open(pdf) as document:
        return [page.get_text().split()[0] for page in document]


def test_the_hybrid_chunker_without_its_packages_is_refused_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(docling_chunking, "find_spec", lambda name: None)
    with pytest.raises(docling_chunking.ChunkingRefused, match=r"bucketdigest\[semantic\]"):
        ChunkerChoice.asked("hybrid")
    assert ChunkerChoice.asked("hierarchical").chunker == "hierarchical"
