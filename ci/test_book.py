"""The built book in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium).

Run by ci/test.sh after `jupyter-book build`: every page in the table of contents loads, every image on it has
rendered with a non-zero size, every internal link resolves, and the landing page shows the climb chart. Launch
buttons appear only once _config.yml names the repository, and then point where tools/set_repository.py says.
"""
import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"


def _pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f + ".html" for f in files]


@contextlib.contextmanager
def _serve(directory: Path):
    """A local web server for a built site, for as long as the block runs."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test log to the test's own lines
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], ConnectionError):  # a page left mid-download is no failure
                super().handle_error(request, client_address)

    handler = functools.partial(Quiet, directory=str(directory))
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def site():
    if not (SITE / "index.html").exists():
        pytest.fail("no built book: run `jupyter-book build .` first (ci/test.sh does)")
    with _serve(SITE) as url:
        yield url


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
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, read by the page test
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
    # No error in the console (an uncaught script error, a theme complaint, a missing file), and nothing fetched from
    # another host: the book works offline (the widget scripts myst-nb would take from CDNs are off in _config.yml; a
    # widget shows its caption instead).
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE" or "Uncaught" in e["message"]]
    assert not errors, f"{page}: {errors[:3]}"
    external = browser.execute_script(
        "return [...document.querySelectorAll('script[src], link[href][rel~=stylesheet], img[src]')]"
        ".map(e => e.src || e.href).filter(u => !u.startsWith(location.origin))")
    assert not external, f"{page}: fetched from another host: {external[:3]}"
    if page.endswith("playground.html"):
        text = browser.execute_script("return document.body.innerText")
        assert "(run this cell in Jupyter to use it)" in text and "The editor opens on 04_swizzle" in text, page
    hrefs = browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")
    for href in {h.split("#")[0] for h in hrefs}:
        if urlparse(href).netloc == urlparse(site).netloc:
            with urllib.request.urlopen(href, timeout=10) as resp:
                assert resp.status == 200, f"{page}: link {href} -> {resp.status}"


def test_the_column_is_as_wide_as_the_figures_are_drawn_for(site, browser):
    # helpers/figures/common.py holds every figure to 8 pt as shown in a COLUMN_PX column (tests/test_legible.py,
    # and every chapter's figures under ci/test.sh); _static/column.css gives the outputs that column at 1280 px.
    sys.path.insert(0, str(ROOT))
    from helpers.figures.common import COLUMN_PX
    browser.get(urljoin(site, "chapters/07_tma.html"))
    assert browser.execute_script("return window.innerWidth") == 1280
    widths = browser.execute_script(
        "return [...document.querySelectorAll('div.cell_output')].map(e => e.getBoundingClientRect().width)")
    assert widths and min(widths) >= COLUMN_PX, widths[:3]


def _wrapped_tables(browser) -> list[str]:
    """The first row of each table of results or profiles (helpers.tables.table, helpers.profile.table: the header,
    the rows and what is indented under them, not what a cell prints after) on the page that is wider than its box."""
    return browser.execute_script("""
        return [...document.querySelectorAll('div.cell_output pre')].filter(p => /^rung +(size +dtype +TFLOP|N +time)/.test(p.innerText))
          .map(p => { const lines = p.innerText.split('\\n'); let n = 1;
                      while (n < lines.length && /^(\\S+ +\\d|cuBLAS \\(|    )/.test(lines[n])) n++;
                      const c = p.cloneNode(false); c.textContent = lines.slice(0, n).join('\\n');
                      c.style.whiteSpace = 'pre'; c.style.width = 'max-content'; c.style.position = 'absolute';
                      p.parentElement.appendChild(c);
                      const wide = c.getBoundingClientRect().width > p.getBoundingClientRect().width + 1; c.remove();
                      return wide ? lines[1] : null; })
          .filter(x => x);""")


def test_no_result_table_wraps(site, browser):
    for page in _pages():
        browser.get(urljoin(site, page))
        assert _wrapped_tables(browser) == [], page


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


def _hrefs(browser) -> list[str]:
    return browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")


def test_launch_buttons_match_the_config(site, browser):
    # Until _config.yml names the repository there must be no launch button at all (jupyter-book would otherwise
    # point it at its own repository); once it does, every chapter has them.
    named = bool(yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"])
    for page in _pages():
        if page.startswith("chapters/"):
            browser.get(urljoin(site, page))
            colab = [h for h in _hrefs(browser) if h.startswith("https://colab.research.google.com/")]
            assert bool(colab) == named, f"{page}: Colab links {colab}"


def test_launch_buttons_once_the_book_names_its_repository(tmp_path, browser):
    # A two-page copy of the book, named after a placeholder repository and hub, built and opened for real.
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copytree(ROOT / "_ext", book / "_ext")  # the config's local Sphinx extensions
    shutil.copytree(ROOT / "_static", book / "_static")  # its stylesheets and the favicon it names
    shutil.copy(ROOT / "chapters" / "06_wgmma.ipynb", book / "chapters")
    (book / "intro.md").write_text("# Launch buttons\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nparts:\n  - caption: Hopper\n    chapters:\n"
                                   "      - file: chapters/06_wgmma\n")
    repo, hub = "https://github.com/example-org/gemm-ladder", "https://hub.example.org"
    subprocess.run([sys.executable, "-m", "tools.set_repository", repo, "--hub", hub, "--root", str(book)],
                   cwd=ROOT, check=True, capture_output=True)
    build = subprocess.run(["jupyter-book", "build", str(book), "-W", "-q"], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    with _serve(book / "_build" / "html") as url:
        browser.get(urljoin(url, "chapters/06_wgmma.html"))
        hrefs = _hrefs(browser)
    assert "https://colab.research.google.com/github/example-org/gemm-ladder/blob/main/chapters/06_wgmma.ipynb" in hrefs
    hub_links = [h for h in hrefs if h.startswith(f"{hub}/hub/user-redirect/git-pull?")]
    assert len(hub_links) == 1, hrefs
    query = parse_qs(urlparse(hub_links[0]).query)
    assert query == {"repo": [repo], "urlpath": ["lab/tree/gemm-ladder/chapters/06_wgmma.ipynb"], "branch": ["main"]}
    assert repo in hrefs  # the repository button
