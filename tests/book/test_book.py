"""The course website (`tito book build`), built from this checkout and read in headless Chromium.

Every chapter loads from file:// with no console error and no request off the machine, shows its figures, shows the
exercise stubs and no line of any solution region or hidden check (taken from the source notebooks), every link
inside the site resolves, and search (over `tito book serve`'s server) finds attention. Run it alone with
`pytest -m book`. It needs the docs extra and Chromium (`apt-get install chromium`); without them it skips.
"""
import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
        shown += [line for line in rest if not line.startswith("#|")] \
            if meta.get("solution") and cell["cell_type"] == "code" else []  # nbdev's directives are not shown
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
    done = subprocess.run([sys.executable, "-m", "tito", "book", "serve", "--dir", str(tmp_path), "--port", "0"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no built book" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_api_reference_shows_a_package_and_each_of_its_modules_once(site):
    page = (site / "api.html").read_text(encoding="utf-8")
    for name in ("tinytorch.perf.enable", "tinytorch.perf.measure.compare", "tinytorch.perf.threads.parallel_map"):
        assert f'id="{name}"' in page, f"the API reference lacks {name}"
    assert 'id="tinytorch.perf.compare"' not in page, "the package's section repeats the names it re-exports"


# --- how the pages read (issue: a website that reads like a textbook) -------------------------------------------

CHAPTER_PAGES = [n.relative_to(REPO).with_suffix(".html") for n in NOTEBOOKS]
WARNING = re.compile(r"\b\w+Warning: ")
HOURS = re.compile(r"\*\*Time:\*\*\s*(\d+)\s*[–-]\s*(\d+)\s*hours")


def machine_traces(text: str) -> list[str]:
    """What of this build machine a page must not show: its checkout's and Python's paths, temporary files, the
    theme's placeholder author, a Python warning, an nbdev directive line."""
    tmp = tempfile.gettempdir()
    marks = [str(REPO), sys.prefix, os.path.realpath(sys.prefix), f"{tmp}/tito-", f"{tmp}/ipykernel",
             str(Path.home()) + "/", "Author name not set"]
    found = [mark for mark in marks if mark in text]
    found += WARNING.findall(text) + re.findall(r"^#\| \w+(?: [\w.]+)?[ \t]*$", text, flags=re.MULTILINE)
    return found


def test_no_page_shows_the_build_machine(site):
    "Every page's text (code and outputs included): no path of this machine, warning, placeholder or directive."
    shown = {}
    for page in site.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        if machine_traces(text):
            shown[str(page.relative_to(site))] = machine_traces(text)[:3]
    assert shown == {}, f"pages show the build machine: {shown}"


@pytest.mark.parametrize("page", CHAPTER_PAGES, ids=lambda p: p.stem)
def test_code_fits_at_1400_px_and_the_page_at_390(site, browser, page):
    visit = Visit(browser)
    visit.page.set_viewport_size({"width": 1400, "height": 900})
    visit.open((site / page).as_uri())
    wide = visit.page.evaluate("""[...document.querySelectorAll('article pre, article div.cell_output img')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right >
                     e.closest('article').getBoundingClientRect().right + 1)
        .map(e => (e.textContent || e.src).slice(0, 60))""")
    assert wide == [], f"{page.name}: {len(wide)} blocks overflow their column at 1400 px: {wide[:3]}"
    outputs = visit.page.evaluate("[...document.querySelectorAll('div.cell_output')].map(o => o.textContent)")
    assert not any("not installed" in o for o in outputs), f"{page.name}: an output says something is not installed"
    visit.page.set_viewport_size({"width": 390, "height": 800})
    visit.page.wait_for_timeout(300)
    width = visit.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{page.name} is {width} px wide on a 390 px phone"
    clipped = visit.page.evaluate("""[...document.querySelectorAll('article table')]
        .filter(t => t.scrollWidth > t.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(t).overflowX))
        .length""")
    assert clipped == 0, f"{page.name}: {clipped} tables are clipped at 390 px"
    visit.check_clean()
    visit.page.close()


def exercise_titles(notebook: Path) -> list[str]:
    "The headings `### Exercise N: title` of the source notebook that a solution cell follows (before the next)."
    titles, current = [], None
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        found = re.search(r"^#{2,4} (Exercise [^\n]+)$", source, flags=re.MULTILINE)
        if cell["cell_type"] == "markdown" and found:
            current = found.group(1).replace("`", "")
        elif current and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            titles.append(current)
            current = None
    return titles


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_is_a_box_with_its_fields(site, browser, notebook):
    visit = Visit(browser)
    visit.open((site / notebook.relative_to(REPO)).with_suffix(".html").as_uri())
    boxes = visit.page.evaluate("""[...document.querySelectorAll('div.exercise-box')].map(b => ({
        title: b.querySelector('.exercise-title')?.textContent || '',
        write: b.querySelector('.exercise-write')?.textContent || '',
        exports: b.querySelector('.exercise-exports')?.textContent || '',
        checks: b.querySelector('.exercise-checks')?.textContent || '',
        stub: [...b.querySelectorAll('div.cell pre')].map(p => p.textContent).join('\\n'),
        border: getComputedStyle(b).borderTopWidth}))""")
    titles = list(dict.fromkeys(exercise_titles(notebook)))
    assert list(dict.fromkeys(b["title"] for b in boxes)) == titles, f"{notebook.name}: the boxes are not the exercises"
    graded = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in _graded_cells(notebook)]
    for box in boxes:
        assert "raise NotImplementedError" in box["stub"], f"{box['title']}: no stub in its box"
        assert box["write"] and box["border"] != "0px", f"{box['title']}: no field saying what to write, or no border"
        assert box["exports"].startswith("tinytorch/") or "not exported" in box["exports"], box["exports"]
        assert any(g in box["checks"] for g in graded) and "tito module complete" in box["checks"], box["checks"]
    stubs = visit.page.evaluate("[...document.querySelectorAll('div.cell pre')].filter(p => "
                                "p.textContent.includes('raise NotImplementedError()') && "
                                "!p.closest('div.exercise-box')).length")
    assert stubs == 0, f"{notebook.name}: {stubs} stubs outside an exercise box"
    unlabelled = visit.page.evaluate("""(() => {
        const first = document.querySelector('div.exercise-box');
        return [...document.querySelectorAll('div.cell_output')]
            .filter(o => first.compareDocumentPosition(o) & Node.DOCUMENT_POSITION_FOLLOWING)
            .filter(o => !o.previousElementSibling?.classList.contains('solution-label')).length })()""")
    assert unlabelled == 0, f"{notebook.name}: {unlabelled} outputs of the course's solution are not labelled"
    visit.check_clean()
    visit.page.close()


def test_the_front_page_starts_a_reader(site, browser):
    visit = Visit(browser)
    visit.page.set_viewport_size({"width": 1400, "height": 900})
    visit.open((site / "index.html").as_uri())
    rows = visit.page.evaluate("[...document.querySelectorAll('article table tr')].map(r => "
                               "({link: r.querySelector('a')?.getAttribute('href'), text: r.textContent}))")
    for notebook, page in zip(NOTEBOOKS, CHAPTER_PAGES):
        low, high = HOURS.search(notebook.read_text(encoding="utf-8")).groups()
        row = next((r for r in rows if r["link"] == str(page)), None)
        assert row is not None and f"{low}–{high} h" in row["text"], f"the front page lacks {page} with its hours"
    links = visit.page.evaluate("[...document.querySelectorAll('article a')].map(a => a.getAttribute('href'))")
    assert "docs/STUDENT_README.html" in links and "tito-commands.html" in links, "no student guide or command page"
    assert book.repository(Workspace.find(REPO)) in links, "no link to the repository"
    searches = visit.page.evaluate("[...document.querySelectorAll('input[type=search], .search-button-field')]"
                                   ".filter(e => e.offsetParent !== null).length")
    assert searches == 1, f"{searches} search boxes on the front page"
    visit.check_clean()
    commands = (site / "tito-commands.html").read_text(encoding="utf-8")
    assert "tito module complete" in commands and "tito book build" in commands, "the command reference is empty"
    mathjax = sum(f.stat().st_size for f in (site / "_static" / "mathjax").rglob("*") if f.is_file())
    assert mathjax < 4_000_000, f"the site carries {mathjax / 1e6:.0f} MB of MathJax"


def test_a_chapter_whose_packages_are_missing_is_refused_in_one_line(tmp_path):
    "numba hidden from the build: chapter 08 is refused before anything runs, naming numba and the install."
    code = ("import sys; sys.modules['numba'] = None; from tito.cli import main; "
            f"sys.argv = ['tito', 'book', 'build', '--only', '08', '--out', {str(tmp_path)!r}]; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "numba" in lines[0] and book.COURSE_INSTALL in lines[0], \
        done.stderr
