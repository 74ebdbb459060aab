"""Check the built documentation site in a real browser (``make docs-check``).

Serves ``docs/_build/html`` on 127.0.0.1 and drives headless Chromium (Debian's
``chromium`` and ``chromium-driver`` packages, through Selenium) over every page reachable
from the home page:

- every page loads and has a title and a main article, with no error in the browser
  console (resources on other hosts are reported apart: they are not the site's files);
- every script a page loads is the site's own (MathJax is served from ``_static/mathjax``,
  so equations render offline), and a page with math has it typeset by MathJax;
- every link of every page to the site resolves: the file exists and, for ``page#anchor``,
  the target page has an element with that id;
- every image of every page loaded (``naturalWidth > 0``);
- the search page returns results for "Viterbi" (and a few more queries);
- screenshots of the home page and of a gallery page are written to ``--screenshots``.

With ``--report DIR`` it checks an HTML report written by ``hiddenstate fit --report`` or
``hiddenstate report`` instead (:func:`check_report`): the page loads with no console
error, and every image loaded.

Exit status 0 when everything holds, 1 otherwise, with one line per problem.

    python docs/check_site.py docs/_build/html [--screenshots DIR] [--max-pages N]
    python docs/check_site.py --report REPORT_DIR [--screenshots DIR]
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SEARCHES = ("Viterbi", "PROPS", "Baum-Welch", "Kneser-Ney", "quick start")
#: a query whose results must include a page (the new user's search finds the start page)
SEARCH_FINDS = {"quick start": "getting-started.html"}


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def browser(user_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={user_dir}", "--window-size=1280,900"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def local_file(root: Path, base: str, url: str) -> Path | None:
    """The file a same-site URL points at, or None for another site."""
    if not url.startswith(base):
        return None
    path = unquote(urlparse(url).path)
    target = root / path.lstrip("/")
    return target / "index.html" if target.is_dir() else target


@functools.cache
def ids_of(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


def check(root: Path, shots: Path | None, max_pages: int | None) -> list[str]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    problems: list[str] = []
    external: set[str] = set()
    server, base = serve(root)
    user_dir = tempfile.mkdtemp(prefix="chromium-profile-")
    driver = browser(user_dir)
    seen, queue = {base + "index.html"}, deque([base + "index.html"])
    pages = links = images = 0
    try:
        while queue and (max_pages is None or pages < max_pages):
            url = queue.popleft()
            driver.get(url)
            pages += 1
            page = url[len(base):]
            if not driver.title:
                problems.append(f"{page}: no title")
            if not driver.find_elements(By.CSS_SELECTOR, "article, main"):
                problems.append(f"{page}: no article")
            for entry in driver.get_log("browser"):
                if entry["level"] != "SEVERE":
                    continue
                msg = entry["message"]
                if "127.0.0.1" not in msg.split(" ")[0] and "http" in msg.split(" ")[0]:
                    external.add(msg.split(" ")[0])  # another host's file, e.g. a CDN
                else:
                    problems.append(f"{page}: console error: {msg}")
            foreign = driver.execute_script(
                "return Array.from(document.scripts).map(s => s.src).filter(s => s && "
                "!s.startsWith(arguments[0]))", base)
            problems += [f"{page}: loads a script from another host: {src}" for src in foreign]
            if driver.find_elements(By.CSS_SELECTOR, ".math"):
                try:
                    WebDriverWait(driver, 20).until(
                        lambda d: d.find_elements(By.CSS_SELECTOR, "mjx-container"))
                except Exception:  # noqa: BLE001 - a timeout is the failure being checked
                    problems.append(f"{page}: math not typeset by MathJax within 20 s")
            broken = driver.execute_script(
                "return Array.from(document.images).filter(i => !(i.complete && "
                "i.naturalWidth > 0)).map(i => i.src)")
            images += len(driver.find_elements(By.TAG_NAME, "img"))
            problems += [f"{page}: image did not load: {src}" for src in broken]
            hrefs = driver.execute_script(
                "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
            for href in hrefs:
                target, anchor = urldefrag(href)
                path = local_file(root, base, target)
                if path is None:
                    continue
                links += 1
                if not path.is_file():
                    problems.append(f"{page}: broken link {href[len(base):]}")
                    continue
                if anchor and path.suffix == ".html" and unquote(anchor) not in ids_of(path):
                    problems.append(f"{page}: link to a missing anchor {href[len(base):]}")
                if path.suffix == ".html" and target not in seen:
                    seen.add(target)
                    queue.append(target)
            if shots is not None and page == "index.html":
                driver.save_screenshot(str(shots / "home.png"))
            if shots is not None and page == "auto_examples/plot_02_nile_regimes.html":
                driver.save_screenshot(str(shots / "gallery-nile.png"))
        for query in SEARCHES:
            driver.get(f"{base}search.html?q={query}")
            try:
                WebDriverWait(driver, 60).until(  # Sphinx's search says when it is done
                    lambda d: "found" in d.execute_script(
                        "const s = document.querySelector('#search-results .search-summary');"
                        " return s ? s.textContent : '';"))
                hits = len(driver.find_elements(By.CSS_SELECTOR, "#search-results li"))
                if not hits:
                    raise RuntimeError("no results")
                print(f"search {query!r}: {hits} results")
                found = driver.execute_script(
                    "return Array.from(document.querySelectorAll('#search-results li a'))"
                    ".map(a => a.href)")
                want = SEARCH_FINDS.get(query)
                if want and not any(want in href for href in found):
                    problems.append(f"search {query!r}: {want} is not among the results")
            except Exception:  # noqa: BLE001 - a timeout is the failure being checked
                problems.append(f"search {query!r}: no results within 60 s")
    finally:
        driver.quit()
        server.shutdown()
    print(f"{pages} pages, {links} links to the site, {images} images checked")
    for url in sorted(external):
        print(f"note: not loaded from another host (no network here?): {url}")
    return problems


def check_report(report: Path, shots: Path | None = None) -> tuple[list[str], dict]:
    """Open ``report/index.html`` (served on 127.0.0.1) in headless Chromium.

    Returns the problems (a console error, an image that did not load, a page without a
    title) and what the browser saw: ``images`` (each image's alt text and natural width
    and height, in page order) and ``sections`` (the ids of the page's sections). With
    ``shots``, a full-page screenshot ``report.png`` is written there."""
    from selenium.webdriver.common.by import By

    problems: list[str] = []
    server, base = serve(report)
    user_dir = tempfile.mkdtemp(prefix="chromium-profile-")
    driver = browser(user_dir)
    try:
        driver.get(base + "index.html")
        if not driver.title:
            problems.append("index.html: no title")
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                problems.append(f"index.html: console error: {entry['message']}")
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete ? "
            "i.naturalWidth : 0, i.complete ? i.naturalHeight : 0])")
        problems += [f"index.html: image did not load: {alt}" for alt, w, _ in images if not w]
        sections = [e.get_attribute("id")
                    for e in driver.find_elements(By.CSS_SELECTOR, "section[id]")]
        if shots is not None:
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(1280, min(int(height) + 100, 16000))
            driver.save_screenshot(str(shots / "report.png"))
    finally:
        driver.quit()
        server.shutdown()
    return problems, {"images": images, "sections": sections}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, nargs="?", default=Path("docs/_build/html"))
    ap.add_argument("--screenshots", type=Path, default=None,
                    help="write home.png and gallery-nile.png here")
    ap.add_argument("--max-pages", type=int, default=None)
    ap.add_argument("--report", type=Path, default=None,
                    help="check this report folder (index.html) instead of the site")
    args = ap.parse_args(argv)
    if args.report is not None:
        if not (args.report / "index.html").is_file():
            print(f"{args.report}/index.html not found: write a report first")
            return 1
        if args.screenshots:
            args.screenshots.mkdir(parents=True, exist_ok=True)
        problems, seen = check_report(args.report.resolve(), args.screenshots)
        for alt, w, h in seen["images"]:
            print(f"image {alt!r}: {w} x {h}")
        for p in problems:
            print("PROBLEM:", p)
        print(f"{len(problems)} problems; sections: {', '.join(seen['sections'])}")
        return 1 if problems else 0
    if not (args.site / "index.html").is_file():
        print(f"{args.site}/index.html not found: build the site first (make docs)")
        return 1
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not Path(tool).exists():
            print(f"{tool} not found: apt-get install chromium chromium-driver")
            return 1
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    problems = check(args.site.resolve(), args.screenshots, args.max_pages)
    for p in problems:
        print("PROBLEM:", p)
    print(f"{len(problems)} problems ({time.perf_counter() - t0:.0f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
