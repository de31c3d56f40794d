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

from bucketdigest.serve.app import background_server
from bucketdigest.serve.backend import ServeSettings
from bucketdigest.worker.document_blocks import text_layer_words, word_keys
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


def test_a_hit_opens_on_its_page_with_the_highlight_over_its_words(
    server: str, browser: webdriver.Chrome, served: Served
) -> None:
    long_pdf = served.digests["rulebooks/long.pdf"]
    answer = httpx.get(
        f"{server}/api/search/chunks", params={"q": "The Long Rulebook", "limit": 20}
    )
    hit = next(h for h in answer.json()["hits"] if h["digest"] == long_pdf)
    browser.get(server + hit["view"])
    wait = WebDriverWait(browser, 20)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "rect.highlight")))
    shown = browser.execute_script(
        "const box = e => { const b = e.getBoundingClientRect();"
        " return [b.left, b.top, b.right, b.bottom]; };"
        "return { svg: box(document.querySelector('#page-view')),"
        " rects: [...document.querySelectorAll('rect.highlight')].map(box) };"
    )

    # the words of the hit, where the PDF's own text layer puts them, fall in a highlight
    source = next(p for p in Path(served.settings.bucket).glob(f"store/raw/{long_pdf}.*"))
    page = pymupdf.open(source)[hit["page"] - 1]
    left, top, right, _ = shown["svg"]
    scale = (right - left) / page.rect.width
    wanted = set(word_keys(hit["snippet"]))
    words = [w for w in text_layer_words(page) if set(word_keys(w.text)) & wanted]
    assert len(words) >= 3
    for word in words:
        cx = left + (word.x0 + word.x1) / 2 * scale
        cy = top + (word.y0 + word.y1) / 2 * scale
        assert any(x0 <= cx <= x1 and y0 <= cy <= y1 for x0, y0, x1, y1 in shown["rects"]), word

    # and the page image under it shows them: dark text pixels inside the highlight, once the
    # image has loaded (asked again until then)
    highlight = browser.find_element(By.CSS_SELECTOR, "rect.highlight")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", highlight)

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
