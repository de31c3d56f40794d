"""A real browser (Debian's chromium, headless) searches, opens a hit and reads the page."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pymupdf
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from bucketdigest.search.indexer import index_bucket
from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.tokens import Scope, add_token
from bucketdigest.worker.document_blocks import Word, text_layer_words, word_keys
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.search.conftest import digest_folder
from tests.serve.conftest import Served

pytestmark = pytest.mark.slow


@pytest.fixture
def server(served: Served) -> Iterator[str]:
    """``bucketdigest serve`` on a free loopback port, in this process."""
    with background_server(ServeSettings(store=served.settings, port=0)) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "scripts/setup.sh installs Debian's chromium and chromium-driver"
    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager look for a driver online
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1000")
    chrome = webdriver.Chrome(options=options, service=Service(driver))
    yield chrome
    chrome.quit()


def test_search_click_a_hit_and_read_the_page(
    server: str, browser: webdriver.Chrome, served: Served, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shots = tmp_path_factory.mktemp("screenshots")
    wait = WebDriverWait(browser, 20)
    browser.get(server + "/")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("ships firing broadsides of cannon")
    box.submit()
    first = wait.until(
        expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, "article h3 a"))
    )
    assert browser.find_elements(By.TAG_NAME, "mark")
    browser.save_screenshot(str(shots / "search.png"))
    first.click()
    wait.until(expected_conditions.presence_of_element_located((By.ID, "page-1")))
    assert served.digests["naval/broadsides.md"] in browser.current_url
    assert "Boarding actions begin" in browser.find_element(By.ID, "page-1").text
    browser.get(f"{server}/documents/{served.digests['rulebooks/long.pdf']}")
    wait.until(expected_conditions.presence_of_element_located((By.ID, "page-1")))
    thumbnail = browser.find_element(By.CSS_SELECTOR, ".doc-head img")
    assert browser.execute_script("return arguments[0].naturalWidth", thumbnail) > 0
    browser.save_screenshot(str(shots / "document.png"))
    browser.get(server + "/status")
    assert "Recent failures" in browser.find_element(By.TAG_NAME, "main").text
    browser.save_screenshot(str(shots / "status.png"))
    browser.set_window_size(400, 900)  # a phone: nothing wider than the screen
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 400
    print(f"screenshots: {shots}")
    assert all((shots / f"{name}.png").stat().st_size > 10_000 for name in ("search", "document"))


def test_the_api_page_renders_every_route_offline(server: str, browser: webdriver.Chrome) -> None:
    browser.get(server + "/docs")
    wait = WebDriverWait(browser, 30)
    wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".opblock-summary"))
    )
    page = browser.find_element(By.TAG_NAME, "body").text
    assert "Unable to render this definition" not in page
    assert "/api/search/chunks" in page and "/api/documents/{digest}/reprocess" in page
    assert browser.find_elements(By.CSS_SELECTOR, ".version-stamp"), "the OpenAPI version shows"


STATEMENT = [
    (
        "Account summary",
        "Your current account closed the quarter with a balance of 4,210 "
        "euros after 38 card payments and two transfers to your savings account.",
    ),
    (
        "Card payments",
        "Payments by card abroad are converted at the network's rate of the "
        "day they settle; no foreign transaction fee applies to this account.",
    ),
    (
        "Standing orders",
        "Rent of 950 euros leaves on the first working day of each month; "
        "change or stop a standing order in the app up to a day before it runs.",
    ),
    (
        "Overdraft",
        "An arranged overdraft of up to 500 euros costs nothing for the first "
        "seven days each month, then 9.9 percent a year on what you owe.",
    ),
    (
        "Cheques",
        "Cheques paid in at a branch clear within three working days; a cheque "
        "returned unpaid is taken back from your balance with a notice.",
    ),
    (
        "Contact",
        "Call the number on the back of your card, day or night, if the card is "
        "lost or stolen, or if you do not recognise a payment on this statement.",
    ),
    (
        "Interest",
        "Savings balances earn interest at an annual rate of 2.5 percent, worked "
        "out daily and paid into the savings account on the last day of each month.",
    ),
    (
        "Deposit protection",
        "Eligible deposits are protected up to 100,000 euros per "
        "person by the national deposit guarantee scheme.",
    ),
]


def _statement_pdf(path: Path) -> Path:
    """One A4 page of a bank's notes: eight short sections, one topic each."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 64), "Quarterly statement notes", fontsize=18, fontname="hebo")
    y = 96.0
    for heading, text in STATEMENT:
        page.insert_text((56, y), heading, fontsize=12, fontname="hebo")
        box = pymupdf.Rect(56, y + 8, 539, y + 78)
        assert page.insert_textbox(box, text, fontsize=11, fontname="helv") >= 0
        y += 90
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def statement(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A served bucket holding the statement page, indexed: its URL and the PDF."""
    root = tmp_path_factory.mktemp("statement")
    source = _statement_pdf(root / "in" / "statement.pdf")
    store = LocalStore(root / "bucket")
    digest_folder(store, root / "in")
    settings = StoreSettings(bucket=str(root / "bucket"))
    index_bucket(store, settings)
    with background_server(ServeSettings(store=settings, port=0)) as url:
        yield url, source


def test_a_hit_opens_on_its_page_with_the_paragraph_that_answers_highlighted(
    statement: tuple[str, Path], browser: webdriver.Chrome
) -> None:
    server, source = statement
    answer = httpx.get(f"{server}/api/search/chunks", params={"q": "interest rate on savings"})
    hit = answer.json()["hits"][0]
    assert len(hit["regions"]) < len(hit["chunk_regions"]), "a part of the chunk, not all"
    browser.get(server + hit["view"])
    wait = WebDriverWait(browser, 20)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "rect.highlight")))
    shown = browser.execute_script(
        "const box = e => { const b = e.getBoundingClientRect();"
        " return [b.left, b.top, b.right, b.bottom]; };"
        "return { svg: box(document.querySelector('#page-view')),"
        " rects: [...document.querySelectorAll('rect.highlight')].map(box),"
        " height: window.innerHeight };"
    )

    # the answering paragraph's words, where the PDF's text layer puts them, are highlighted
    page = pymupdf.open(source)[0]
    left, top, right, _ = shown["svg"]
    scale = (right - left) / page.rect.width
    words = text_layer_words(page)
    answer_words = set(word_keys(STATEMENT[6][1]))
    below = 96 + 90 * 6 + 8  # the paragraph's box: under its heading, above the next one
    inside = [w for w in words if below - 1 <= w.y0 < below + 50]
    assert {k for w in inside for k in word_keys(w.text)} == answer_words
    assert len(inside) >= 20

    def highlighted(word: Word) -> bool:
        cx = left + (word.x0 + word.x1) / 2 * scale
        cy = top + (word.y0 + word.y1) / 2 * scale
        return any(x0 <= cx <= x1 and y0 <= cy <= y1 for x0, y0, x1, y1 in shown["rects"])

    assert all(highlighted(w) for w in inside)
    # and little else: under a third of the page's text area
    text_area = (max(w.x1 for w in words) - min(w.x0 for w in words)) * (
        max(w.y1 for w in words) - min(w.y0 for w in words)
    )
    lit = sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in shown["rects"]) / scale**2
    assert lit < text_area / 3, (lit, text_area)
    assert sum(highlighted(w) for w in words) < len(words) / 3

    # scrolled into view: the highlight is on the screen as the page opens
    assert all(0 <= y0 < shown["height"] for _, y0, _, _ in shown["rects"]), shown

    # and the page image under it shows them: dark text pixels inside the highlight, once the
    # image has loaded (asked again until then)
    highlight = browser.find_element(By.CSS_SELECTOR, "rect.highlight")

    def dark_pixels(_: object) -> bool:
        script = (
            "const b = arguments[0].getBoundingClientRect(); return [b.x, b.y, b.right, b.bottom]"
        )
        box = browser.execute_script(script, highlight)
        shot = pymupdf.Pixmap(browser.get_screenshot_as_png())
        ratio = shot.width / browser.execute_script("return window.innerWidth")
        x0, y0, x1, y1 = (round(v * ratio) for v in box)
        dark = sum(
            1
            for x in range(max(x0, 0), min(x1, shot.width), 2)
            for y in range(max(y0, 0), min(y1, shot.height), 2)
            if sum(shot.pixel(x, y)[:3]) < 450  # print, seen through the highlight
        )
        return dark > 20

    WebDriverWait(browser, 20).until(dark_pixels, "no printed words under the highlight")


def test_a_file_dropped_on_the_upload_page_is_sent_followed_and_linked_once_done(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    store = LocalStore(tmp_path / "bucket")
    token, _ = add_token(store, "desk", (Scope.UPLOAD,))
    settings = ServeSettings(
        store=StoreSettings(bucket=str(tmp_path / "bucket")), port=0, token="x" * 24
    )
    with background_server(settings) as url:
        wait = WebDriverWait(browser, 30)
        browser.get(url + "/upload")
        browser.find_element(By.ID, "token").send_keys(token)
        # a drop, as a browser makes it: a DataTransfer holding the file, on the drop area
        browser.execute_script(
            """
            const data = new DataTransfer();
            data.items.add(new File(["# Dropped\\n\\nThe ferry leaves at dawn.\\n"], "ferry.md",
                                    {type: "text/markdown"}));
            const drop = new DragEvent(
                "drop", {dataTransfer: data, bubbles: true, cancelable: true});
            document.getElementById("drop-zone").dispatchEvent(drop);
            """
        )
        queued = wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, "#uploads li[data-state='todo']")
            )
        )
        assert "ferry.md" in queued.text and "queued" in queued.text
        # a file of a type nobody reads, chosen with the file picker: refused, saying why
        picked = tmp_path / "tool.exe"
        picked.write_bytes(b"MZ")
        browser.execute_script("document.getElementById('files').hidden = false")
        browser.find_element(By.ID, "files").send_keys(str(picked))
        refused = wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, "#uploads li[data-state='failed']")
            )
        )
        assert "no digester handles .exe" in refused.text

        assert Worker(
            store, WorkerSettings(exit_when_idle=True, monitor_every=None)
        ).run().outcomes == {"done": 1}
        link = wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, "#uploads li[data-state='done'] a")
            )
        )
        link.click()
        wait.until(expected_conditions.presence_of_element_located((By.ID, "page-1")))
        assert "The ferry leaves at dawn." in browser.find_element(By.ID, "page-1").text
