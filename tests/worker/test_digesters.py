"""Every digester on real inputs made here: PDFs from PyMuPDF, a scanned page, text, images,
and an OpenAI-compatible endpoint served on 127.0.0.1."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from bucketdigest.shared.embedding import PRECISIONS, shared_embedder
from bucketdigest.shared.errors import DigestError
from bucketdigest.shared.filetypes import file_type
from bucketdigest.shared.samples import make_pdf
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digester import DigestContext
from bucketdigest.worker.digesters import CHAIN
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions
from bucketdigest.worker.digesters.page_ocr import page_dpi, tesseract_pixmap
from bucketdigest.worker.digesters.search_keyword import page_chunks
from tests.documents import scanned_pdf

SCANNED_WORDS = ("Dragons", "breathe", "fire", "initiative")


def _chain_until(ctx: DigestContext, last: str) -> dict:
    """Run the registered digesters in order up to ``last`` in this process, as the sandbox
    child would, writing each one's files into the tree; returns every result."""
    results = {}
    for digester in CHAIN:
        if digester.applies_to(ctx.file):
            produced = digester.run(ctx)
            for result in produced.values():
                for name, data in result.files.items():
                    (ctx.tree / name).parent.mkdir(parents=True, exist_ok=True)
                    (ctx.tree / name).write_bytes(data)
            results.update(produced)
        if digester.name == last:
            return results
    raise AssertionError(last)


def _ctx(tmp_path: Path, source: Path, **settings: object) -> DigestContext:
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    tree.mkdir()
    scratch.mkdir()
    options = DigestSettings(converter=ConverterOptions(mode="legacy"), **settings)
    return DigestContext("cd" * 32, source, file_type(source.suffix), tree, scratch, options)


def test_a_pdf_goes_through_the_whole_chain(tmp_path: Path) -> None:
    source = make_pdf(tmp_path / "rules.pdf", title="Castle Siege", pages=3, seed=7)
    ctx = _ctx(tmp_path, source)
    results = _chain_until(ctx, "search-semantic")
    markdown = results["markdown"]
    assert markdown.content["pages"] == 3
    assert "Castle Siege" in markdown.files["pages/0001.md"].decode()
    thumbnail = pymupdf.Pixmap(results["thumbnail"].files["thumbnail.png"])
    assert max(thumbnail.width, thumbnail.height) == 320
    assert results["ocr"].files == {} and results["ocr"].content["pages"] == []
    tags = json.loads(results["tags"].files["tags.json"])
    assert 0 < len(tags) <= 20 and all(t["keyword"] for t in tags)
    summary = results["summary"]
    assert summary.content["producer"] == "extractive"
    assert (
        summary.content["text"] and summary.content["text"] in (ctx.tree / "summary.md").read_text()
    )
    chunks = [json.loads(line) for line in results["chunks"].files["chunks.jsonl"].splitlines()]
    assert sorted({c["page"] for c in chunks}) == [1, 2, 3]
    assert chunks[0]["headings"][0] == "Castle Siege"
    vectors = np.load(io.BytesIO(results["embeddings"].files["embeddings.npy"]))
    assert vectors.shape == (len(chunks), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    info = json.loads(results["embeddings"].files["embeddings.json"])
    assert info["chunk_ids"] == [c["id"] for c in chunks] and info["dimension"] == 384
    assert info["precision"] == "int8", "8-bit weights unless the bucket says float32"
    windows = np.load(io.BytesIO(results["embeddings"].files["windows.npy"]))
    made = shared_embedder("int8").encode_windows([c["text"] for c in chunks])
    assert windows.shape == made.vectors.shape and np.allclose(windows, made.vectors, atol=1e-5)


def test_float_weights_embed_when_the_bucket_says_so(tmp_path: Path) -> None:
    source = make_pdf(tmp_path / "rules.pdf", title="Castle Siege", pages=2, seed=7)
    ctx = _ctx(tmp_path, source, embedding_precision="float32")
    results = _chain_until(ctx, "search-semantic")
    assert json.loads(results["embeddings"].files["embeddings.json"])["precision"] == "float32"
    chunks = [json.loads(line) for line in results["chunks"].files["chunks.jsonl"].splitlines()]
    windows = np.load(io.BytesIO(results["embeddings"].files["windows.npy"]))
    made = {p: shared_embedder(p).encode_windows([c["text"] for c in chunks]) for p in PRECISIONS}
    assert np.allclose(windows, made["float32"].vectors, atol=1e-5)
    assert not np.allclose(windows, made["int8"].vectors, atol=1e-3), "the weights differ"


def test_a_scanned_page_comes_out_searchable(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, scanned_pdf(tmp_path / "scan.pdf"))
    results = _chain_until(ctx, "search-keyword")
    assert results["ocr"].content["pages"] == [1]
    assert results["ocr"].content["engine"].startswith("tesseract")
    ocr_text = results["ocr"].files["ocr/0001.md"].decode()
    chunks = results["chunks"].files["chunks.jsonl"].decode()
    for word in SCANNED_WORDS:
        assert word in ocr_text
        assert word in chunks


def test_a_scan_in_colour_is_read_in_grey(tmp_path: Path) -> None:
    colour_scan = pymupdf.open(scanned_pdf(tmp_path / "scan.pdf"))
    colour_scan[0].draw_line((72, 760), (500, 760), color=(1, 0, 0))
    colour_scan.save(tmp_path / "colour.pdf")
    assert tesseract_pixmap(colour_scan[0], 72).n == 1

    results = _chain_until(_ctx(tmp_path, tmp_path / "colour.pdf"), "page-ocr")
    ocr_text = results["ocr"].files["ocr/0001.md"].decode()
    assert all(word in ocr_text for word in SCANNED_WORDS)


def test_a_poster_page_is_ocrd_at_the_dpi_its_size_allows(tmp_path: Path) -> None:
    """250 by 500 inches (a real poster in the corpus): 11 gigapixels at 300 dpi, which MuPDF
    refuses; rendered within ``MAX_PIXELS`` instead, its words are found."""
    scan = pymupdf.open(scanned_pdf(tmp_path / "scan.pdf"))
    poster = pymupdf.open()
    page = poster.new_page(width=18000, height=36000)
    page.insert_image(page.rect, stream=scan[0].get_pixmap(dpi=100).tobytes("png"))
    poster.save(tmp_path / "poster.pdf")
    ctx = _ctx(tmp_path, tmp_path / "poster.pdf")
    results = _chain_until(ctx, "page-ocr")
    assert results["ocr"].content["lower_dpi"] == {"1": page_dpi(18000, 36000, 300)}
    assert page_dpi(18000, 36000, 300) < 300 and page_dpi(595, 842, 300) == 300
    assert page_dpi(200, 304, 300) == 600, "a small page is read at a higher resolution"
    assert "Dragons" in results["ocr"].files["ocr/0001.md"].decode()


def test_an_image_is_ocrd_and_thumbnailed(tmp_path: Path) -> None:
    scan = pymupdf.open(scanned_pdf(tmp_path / "scan.pdf"))
    image = tmp_path / "photo.png"
    scan[0].get_pixmap(dpi=200).save(image)
    ctx = _ctx(tmp_path, image)
    results = _chain_until(ctx, "search-keyword")
    assert results["markdown"].files["pages/0001.md"] == b"![image](../images/original.png)\n"
    assert "fire" in results["ocr"].files["ocr/0001.md"].decode()
    assert "thumbnail" in results


def test_a_text_file_is_markdown_as_it_is(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Campaign\n\n## Session one\n\nThe party met a merchant in town.\n")
    ctx = _ctx(tmp_path, notes)
    results = _chain_until(ctx, "search-keyword")
    assert "thumbnail" not in results and "ocr" not in results
    assert results["markdown"].files["pages/0001.md"].decode().startswith("# Campaign")
    chunk = json.loads(results["chunks"].files["chunks.jsonl"])
    assert chunk["headings"] == ["Campaign"] and chunk["page"] == 1  # where it starts
    assert "Session one" in chunk["text"]


def test_chunks_carry_the_heading_path_across_pages_and_split_long_pages() -> None:
    pages = ["# Book\n\n## Combat\n\nSwing.", "More combat.\n\n### Ranged\n\nShoot.", ""]
    chunks = page_chunks(pages)
    assert [(c.page, c.headings) for c in chunks] == [
        (1, ("Book",)),
        (2, ("Book", "Combat")),
    ]
    long = page_chunks(["\n\n".join(f"Paragraph {n} " + "word " * 100 for n in range(30))])
    assert len(long) > 1 and all(len(c.text) <= 4000 for c in long)
    assert [c.part for c in long] == list(range(1, len(long) + 1))


class _ChatServer:
    """An OpenAI-compatible chat endpoint: answers ``replies`` in turn (status, body)."""

    def __init__(self, replies: list[tuple[int, dict]]) -> None:
        self.replies = replies
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                status, answer = outer.replies.pop(0)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def chat() -> Iterator[_ChatServer]:
    server = _ChatServer([])
    yield server
    server.server.shutdown()


def _answer(text: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def test_the_llm_summary_is_asked_of_the_endpoint_with_retries(
    tmp_path: Path, chat: _ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sekret")
    chat.replies += [(503, {"error": "busy"}), (200, _answer("A siege game for two players."))]
    llm = {"llm_url": chat.url, "llm_model": "tiny-model", "api_key_env": "TEST_LLM_KEY"}
    source = make_pdf(tmp_path / "rules.pdf", title="Castle Siege", pages=1, seed=7)
    ctx = _ctx(tmp_path, source, **llm, endpoint_timeout=5)
    summary = _chain_until(ctx, "summary")["summary"]
    assert summary.files["summary.md"] == b"A siege game for two players.\n"
    assert summary.content["producer"] == "llm" and summary.content["model"] == "tiny-model"
    request = chat.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sekret"
    assert request["body"]["model"] == "tiny-model"
    assert "Castle Siege" in request["body"]["messages"][-1]["content"]
    assert len(chat.requests) == 2


def test_an_endpoint_that_refuses_fails_the_summary_with_its_answer(
    tmp_path: Path, chat: _ChatServer
) -> None:
    chat.replies.append((400, {"error": "unknown model"}))
    source = make_pdf(tmp_path / "rules.pdf", title="Castle Siege", pages=1, seed=7)
    ctx = _ctx(tmp_path, source, llm_url=chat.url, llm_model="nope", endpoint_timeout=5)
    with pytest.raises(DigestError, match=r"HTTP 400.*unknown model"):
        _chain_until(ctx, "summary")


def test_a_vision_endpoint_reads_pages_without_a_text_layer(
    tmp_path: Path, chat: _ChatServer
) -> None:
    chat.replies.append((200, _answer("```markdown\n# Rules of Battle\n\nDragons fly.\n```")))
    source = scanned_pdf(tmp_path / "scan.pdf")
    ocr_model = {"ocr_endpoint": chat.url, "ocr_model": "olmocr-test", "endpoint_timeout": 5}
    results = _chain_until(_ctx(tmp_path, source, **ocr_model), "page-ocr")
    assert results["ocr"].files["ocr/0001.md"] == b"# Rules of Battle\n\nDragons fly.\n"
    assert results["ocr"].content["by_endpoint"] == [1]
    (request,) = chat.requests
    image = request["body"]["messages"][0]["content"][1]["image_url"]["url"]
    assert request["body"]["model"] == "olmocr-test" and image.startswith("data:image/png;base64,")


def test_tesseract_reads_a_page_the_vision_endpoint_fails_on(
    tmp_path: Path, chat: _ChatServer
) -> None:
    chat.replies.append((400, {"error": "no vision support"}))
    source = scanned_pdf(tmp_path / "scan.pdf")
    ocr_model = {"ocr_endpoint": chat.url, "ocr_model": "text-only", "endpoint_timeout": 5}
    results = _chain_until(_ctx(tmp_path, source, **ocr_model), "page-ocr")
    assert "Dragons breathe fire" in results["ocr"].files["ocr/0001.md"].decode()
    (problem,) = results["ocr"].content["problems"]
    assert problem.startswith("page 1: the OCR endpoint failed") and "HTTP 400" in problem
