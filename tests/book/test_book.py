"""The course website (`tito book build`), built from this checkout and read in headless Chromium.

Every chapter loads from file:// with no console error and no request off the machine, shows its figures, shows the
exercise stubs and no line of any solution region or hidden check (taken from the source notebooks), every link
inside the site resolves, and search (over `tito book serve`'s server) finds attention. Run it alone with
`pytest -m book`. It needs the docs extra and Chromium (`apt-get install chromium`); without them it skips.
"""
import html.parser
import json
import os
import shutil
import threading
import urllib.parse
from pathlib import Path

import pytest

pytestmark = [pytest.mark.book, pytest.mark.slow]
pytest.importorskip("sphinx", reason="the docs extra is not installed")
pytest.importorskip("myst_nb", reason="the docs extra is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="the docs extra (playwright) is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

from filelock import FileLock  # noqa: E402

from tito import book  # noqa: E402
from tito.workspace import Workspace  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "modules").glob("*/*.ipynb"))
REGIONS = {"solution": ("BEGIN SOLUTION", "END SOLUTION"), "hidden": ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")}
MIN_LINE = 12  # shorter lines (`return x`, `pass`) say nothing about a solution
OFF_MACHINE_OK = ("file:", "data:", "blob:", "about:")


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    "The site, built once for all test processes (pytest-xdist's workers share the parent of their temp folders)."
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this run's folder; without xdist, the parent holds earlier runs too
    out, failed = shared / "book", shared / "book.failed"
    with FileLock(str(shared / "book.lock")):
        if failed.exists():
            pytest.fail(f"the book did not build: {failed.read_text()}")
        if not (out / "index.html").is_file():
            try:
                book.build(Workspace.find(REPO), out)
            except Exception as e:
                failed.write_text(f"{type(e).__name__}: {e}")
                raise
    return out


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Visit:
    "A browser page that records its console errors, uncaught exceptions and every request it makes."

    def __init__(self, browser):
        self.page = browser.new_page()
        self.errors, self.requests = [], []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("response", lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    def open(self, url: str):
        self.page.goto(url, wait_until="load")
        self.page.wait_for_load_state("networkidle")

    def check_clean(self):
        off = [u for u in self.requests if not u.startswith(OFF_MACHINE_OK)
               and urllib.parse.urlsplit(u).hostname not in ("127.0.0.1", "localhost")]
        assert off == [], f"requests off this machine: {off}"
        assert self.errors == [], f"console errors: {self.errors}"


def split_regions(source: str) -> tuple[list[str], list[str]]:
    "A cell's lines strictly inside its solution and hidden-check regions, and its other lines (markers left out)."
    inside, secret, rest = False, [], []
    for line in source.splitlines():
        if any(begin in line for begin, _ in REGIONS.values()):
            inside = True
        elif any(end in line for _, end in REGIONS.values()):
            inside = False
        else:
            (secret if inside else rest).append(line)
    return secret, rest


def secrets_and_stubs(notebook: Path) -> tuple[list[str], list[str], bool]:
    """From a source notebook: the lines of its solution regions and hidden checks that appear nowhere else in it
    (so the page must not show them), the lines of its exercise cells outside the regions (the stubs' signatures,
    which it must show), and whether it draws a figure."""
    secret, visible, shown, figure = [], [], [], False
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        source, meta = "".join(cell["source"]), cell.get("metadata", {}).get("nbgrader", {})
        hidden, rest = split_regions(source)
        if meta.get("solution") and REGIONS["solution"][0] not in source:
            hidden, rest = source.splitlines(), []  # a whole-cell solution: the release shows only the stub
        secret += hidden
        visible.append("\n".join(rest))
        shown += rest if meta.get("solution") and cell["cell_type"] == "code" else []
        figure |= cell["cell_type"] == "code" and "plt." in source
    everywhere_else = "\n".join(visible)
    distinct = sorted({s.strip() for s in secret if len(s.strip()) >= MIN_LINE and s.strip() not in everywhere_else})
    return distinct, sorted({s.strip() for s in shown if len(s.strip()) >= MIN_LINE}), figure


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_as_the_student_sees_it(site, browser, notebook):
    secrets, signatures, figure = secrets_and_stubs(notebook)
    assert secrets and signatures, f"{notebook.name}: no exercise found to compare the page with"
    visit = Visit(browser)
    visit.open((site / notebook.relative_to(REPO)).with_suffix(".html").as_uri())
    text = visit.page.evaluate("document.body.textContent")
    leaked = [line for line in secrets if line in text]
    assert leaked == [], f"{notebook.name}: the page shows {len(leaked)} lines of solutions or hidden checks"
    missing = [line for line in signatures if line not in text]
    assert missing == [], f"{notebook.name}: the page lacks the exercises' given lines {missing[:5]}"
    assert text.count("raise NotImplementedError()") >= sum(1 for _ in _solution_cells(notebook)), \
        f"{notebook.name}: fewer exercise stubs on the page than solution cells in the notebook"
    graded = sum(1 for _ in _graded_cells(notebook))
    assert text.count(" checks passed") == graded and "checks ran (no course answers" not in text, \
        f"{notebook.name}: {graded} graded cells, but {text.count(' checks passed')} say their checks passed " \
        "against the course's answers"
    if figure:
        drawn = visit.page.evaluate("[...document.querySelectorAll('.cell_output img')]"
                                    ".filter(i => i.complete && i.naturalWidth > 0).length")
        assert drawn >= 1, f"{notebook.name} draws a figure, but the page shows no rendered image"
    visit.check_clean()
    visit.page.close()


def _graded_cells(notebook: Path):
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            yield cell


def _solution_cells(notebook: Path):
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            yield cell


def test_landing_and_guides_load_offline(site, browser):
    visit = Visit(browser)
    for page in ("index.html", "docs/GRADING.html", "docs/PERFORMANCE.html", "api.html"):
        visit.open((site / page).as_uri())
    assert visit.page.evaluate("document.querySelectorAll('dl.py.class').length") > 10, "the API reference is empty"
    visit.open((site / "index.html").as_uri())
    landing = visit.page.evaluate("document.body.textContent")
    for words in ("Which path are you on?", "The capstone", "A self-learner", "An instructor"):
        assert words in landing, f"the landing page lacks {words!r}"
    chapters = visit.page.evaluate("[...document.querySelectorAll('table a')].map(a => a.getAttribute('href'))")
    assert [h for h in chapters if h.startswith("modules/")] == \
        [str(n.relative_to(REPO).with_suffix(".html")) for n in NOTEBOOKS], "the course table does not link each chapter"
    visit.check_clean()


def test_math_is_rendered_locally(site, browser):
    visit = Visit(browser)
    visit.open((site / "modules/05_attention/05_attention.html").as_uri())  # its formula for attention
    visit.page.wait_for_selector("mjx-container svg", timeout=30_000)
    assert visit.page.evaluate("[...document.scripts].some(s => s.src.includes('_static/mathjax/tex-svg.js'))"), "MathJax is not the site's own copy"
    visit.check_clean()


class Links(html.parser.HTMLParser):
    "The ids of a page and the targets of its links, images, scripts and stylesheets."

    def __init__(self):
        super().__init__()
        self.ids, self.targets = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.targets.append(attrs[name])


def test_every_internal_link_resolves(site):
    pages = {path: Links() for path in site.rglob("*.html") if "_static" not in path.parts}  # not the theme's templates
    for path, links in pages.items():
        links.feed(path.read_text(encoding="utf-8"))
    broken = []
    for path, links in pages.items():
        for target in links.targets:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme or target.startswith("//"):
                continue  # a link out of the site (clicked, never loaded)
            file = (path.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else path
            if not file.is_file():
                broken.append(f"{path.relative_to(site)} -> {target}")
            elif parts.fragment and file.suffix == ".html" and parts.fragment not in pages[file].ids:
                broken.append(f"{path.relative_to(site)} -> {target} (no such anchor)")
    assert len(pages) >= 12 and broken == [], f"{len(broken)} broken links: {broken[:10]}"


def test_search_finds_attention_over_the_local_server(site, browser):
    server = book.server(site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        visit = Visit(browser)
        visit.open(f"http://127.0.0.1:{server.server_address[1]}/search.html?q=attention")
        visit.page.wait_for_selector("#search-results li a", timeout=30_000)
        found = visit.page.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.href)")
        assert any("05_attention.html" in href for href in found), f"search for attention found {found}"
        visit.check_clean()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_student_view_keeps_no_solution_or_hidden_line(notebook):
    "The chapter's notebook as the book writes it (here unexecuted): the stubs and given lines, no secret."
    import nbformat

    nb = book.student_view(Workspace.find(REPO), nbformat.read(notebook, as_version=4))
    text = "\n".join(cell.source for cell in nb.cells)
    secrets, signatures, _ = secrets_and_stubs(notebook)
    assert [line for line in secrets if line in text] == [], f"{notebook.name}: the student's view keeps secrets"
    assert [line for line in signatures if line not in text] == [], f"{notebook.name}: given lines are missing"


def test_serve_without_a_built_book_is_one_clear_error(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tito", "book", "serve", "--dir", str(tmp_path), "--port", "0"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no built book" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_api_reference_shows_a_package_and_each_of_its_modules_once(site):
    page = (site / "api.html").read_text(encoding="utf-8")
    for name in ("tinytorch.perf.enable", "tinytorch.perf.measure.compare", "tinytorch.perf.threads.parallel_map"):
        assert f'id="{name}"' in page, f"the API reference lacks {name}"
    assert 'id="tinytorch.perf.compare"' not in page, "the package's section repeats the names it re-exports"
