"""The built book in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium).

Run by ci/test.sh after `jupyter-book build`: every page in the table of contents loads, every image on it has
rendered with a non-zero size, every internal link resolves, and the landing page shows the climb chart.
"""
import functools
import http.server
import os
import shutil
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"


def _pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f + ".html" for f in files]


@pytest.fixture(scope="module")
def site():
    if not (SITE / "index.html").exists():
        pytest.fail("no built book: run `jupyter-book build .` first (ci/test.sh does)")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test log to the test's own lines
            pass

    handler = functools.partial(Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are missing; .ci/run installs them (apt-get install chromium "
                        "chromium-driver)")
        pytest.skip("no chromium/chromedriver here: `apt-get install chromium chromium-driver` to run the browser test")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-quic", "--window-size=1280,1000"):
        opts.add_argument(arg)
    b = webdriver.Chrome(service=Service(driver), options=opts)
    b.set_page_load_timeout(60)
    yield b
    b.quit()


@pytest.mark.parametrize("page", _pages())
def test_page_loads_with_rendered_figures_and_live_links(site, browser, page):
    browser.get(urljoin(site, page))
    assert browser.execute_script("return document.readyState") == "complete"
    title = browser.title
    assert title and "404" not in title, f"{page}: title {title!r}"
    images = browser.execute_script(
        "return [...document.querySelectorAll('main img, article img')].map(i => [i.src, i.complete, i.naturalWidth,"
        " i.getBoundingClientRect().width])")
    for src, complete, natural, shown in images:
        assert complete and natural > 0 and shown > 0, f"{page}: image {src} did not render"
    hrefs = browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")
    for href in {h.split("#")[0] for h in hrefs}:
        if urlparse(href).netloc == urlparse(site).netloc:
            with urllib.request.urlopen(href, timeout=10) as resp:
                assert resp.status == 200, f"{page}: link {href} -> {resp.status}"


def test_chapters_show_their_recorded_figures(site, browser):
    for page in _pages():
        if page.startswith("chapters/0"):
            browser.get(urljoin(site, page))
            n = browser.execute_script("return document.querySelectorAll('main img, article img').length")
            assert n >= 1, f"{page} shows no figure"


def test_landing_page_shows_the_climb_chart(site, browser):
    browser.get(site)
    found = browser.execute_script(
        "return [...document.images].filter(i => i.src.endsWith('climb.png') && i.naturalWidth > 0).length")
    assert found == 1
