"""`tito book`: the course as a static website, made with Sphinx, MyST-NB and sphinx-book-theme (the `docs` extra).

Each chapter is its module's notebook, executed once with its solutions by tito's notebook runner (one BLAS thread,
the cell time limit of settings.ini), then turned into the student's version by nbgrader's own release
preprocessors: solution regions become the stubs, hidden checks go. Hidden checks go before the run, so that no
output can show them. The landing page is made of the README's sections; the guides in docs/ are pages; the API
reference comes from the package's docstrings. MathJax is served from the site itself, so no page asks the internet
for anything.
"""
from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tito import book_view
from tito.workspace import Module, TitoError, Workspace, tool_env
from tito.output import last_line

GUIDES = ("docs/STUDENT_README.md", "docs/GRADING.md", "docs/PERFORMANCE.md", "docs/DEVELOPING.md", "docs/DESIGN.md")
LANDING_SECTIONS = ("Which path are you on?", "The capstone")  # from the README, on the front page
ASSETS = Path(__file__).parent / "book_assets"
# What each chapter needs beyond the library's own packages, in one place: a chapter built without them would show
# the opposite of its lesson (Python loops for compiled ones, a profile without PyTorch's bars), so the build refuses.
CHAPTER_NEEDS = {"05": ("torch",), "07": ("torch", "numba", "threadpoolctl"), "08": ("torch", "numba", "threadpoolctl")}
COURSE_INSTALL = 'pip install -e ".[course]"'
HOURS = re.compile(r"\*\*Time:\*\*\s*(\d+)\s*[–-]\s*(\d+)\s*hours")
MACHINE_TRACES = re.compile(r"\b\w*Warning:|(?<![\w.])/(?:tmp|home|root|work|usr|opt|var)/\S+")
MARKDOWN_CODE = re.compile(r"(`[^`]+`)")
PLAIN_MARKUP = re.compile(r"([|*]|(?<=\w)_(?!\w))")  # characters reST would read as markup in plain text
MATHJAX_PACKAGE = "sphinx-mathjax-offline"  # a registry package that ships MathJax 3's files
MATHJAX_FILES = ("tex-svg.js", "input/tex/extensions")  # the page's script and the TeX extensions it may load
FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" '
           'fill="#ee4c2c"/><text x="16" y="22" font-family="sans-serif" font-size="15" font-weight="bold" '
           'text-anchor="middle" fill="#fff">TT</text></svg>')
CONF = '''\
project = {title!r}
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
exclude_patterns = ["_build"]
nb_execution_mode = "off"  # tito ran each notebook once already
nb_merge_streams = True
nb_ipywidgets_js = {{}}  # widgets' JavaScript would come from a CDN; the course has no widgets
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
mathjax_path = "mathjax/tex-svg.js"  # SVG output needs no web fonts
html_static_path = ["_assets"]
html_css_files = ["book.css"]
author = {author!r}
copyright = {author!r}
html_sidebars = {{"**": ["navbar-logo.html", "sbt-sidebar-nav.html"]}}  # search is the header's button alone
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_favicon = "favicon.svg"  # else browsers ask the server for /favicon.ico
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {{"show_toc_level": 2, "use_download_button": False,  # the sources are not copied
                      "repository_url": {repository!r}, "use_repository_button": True,
                      "secondary_sidebar_items": []}}  # the column takes the width: code is 120 characters
html_context = {{"default_mode": "auto"}}  # the theme's script reports an empty mode as an error
autodoc_member_order = "bysource"

from tito.book import sphinx_setup as setup
'''


@dataclass
class Built:
    "A built site: its folder, the seconds each step took (one per chapter, then 'sphinx') and Sphinx's warnings."
    out: Path
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def build(ws: Workspace, out: Path, say=lambda line: None, only: list[str] | None = None) -> Built:
    """Build the site into `out` (replaced): run every chapter (or those numbered in `only`), write the pages, run
    Sphinx. `say` hears each step."""
    _require_docs_extra()
    modules = chosen(ws, only)
    require_chapter_needs(modules)
    built = Built(Path(out).resolve())
    with tempfile.TemporaryDirectory(prefix="tito-book-") as tmp:
        src = Path(tmp) / "src"
        for module in modules:
            start = time.monotonic()
            nb = student_view(ws, executed(ws, module))
            refuse_machine_traces(ws, module, nb)
            nb = book_view.page_view(nb, ws.lib_dir.name, module.number)
            write_notebook(nb, src / ws.rel(module.notebook))
            built.seconds[module.name] = time.monotonic() - start
            say(f"{module.name}: executed and made the student's version in {built.seconds[module.name]:.0f} s")
        write_pages(ws, src, modules)
        start = time.monotonic()
        built.warnings = sphinx(ws, src, built.out, Path(tmp) / "doctrees")
        for module in modules:
            page = built.out / Path(ws.rel(module.notebook)).with_suffix(".html")
            page.write_text(book_view.finish_page(page.read_text(encoding="utf-8")), encoding="utf-8")
        built.seconds["sphinx"] = time.monotonic() - start
        say(f"sphinx: wrote the pages in {built.seconds['sphinx']:.0f} s")
        for line in built.warnings:
            say(line)
    return built


def chosen(ws: Workspace, only: list[str] | None) -> list:
    "The workspace's modules, or those whose numbers are in `only` (an unknown number is an error)."
    modules = ws.modules()
    if not only:
        return modules
    unknown = sorted(set(only) - {m.number for m in modules})
    if unknown:
        raise TitoError(f"no module numbered {', '.join(unknown)} (the course has {modules[0].number}..{modules[-1].number})")
    return [m for m in modules if m.number in only]


def require_chapter_needs(modules):
    "Refuse, in one line, to build a chapter whose packages (CHAPTER_NEEDS) are not installed."
    for module in modules:
        missing = [name for name in CHAPTER_NEEDS.get(module.number, ()) if importlib.util.find_spec(name) is None]
        if missing:
            raise TitoError(f"chapter {module.name} needs {', '.join(missing)}, not installed here: {COURSE_INSTALL}")


def refuse_machine_traces(ws: Workspace, module: Module, nb):
    """Stop the build where an output shows a warning, an error or a path of this machine: it would be on the page
    (the notebooks avoid or filter the warnings they expect)."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text", "") or "".join(str(v) for k, v in output.get("data", {}).items()
                                                     if k == "text/plain")
            found = MACHINE_TRACES.search(text)
            if found:
                line = next(x for x in text.splitlines() if found.group(0) in x).strip()
                raise TitoError(f"{ws.rel(module.notebook)}: cell {index + 1} shows {line[:160]!r} (this machine's "
                                "path or a warning would be on the page)")


def _require_docs_extra():
    for name in ("sphinx", "myst_nb", "sphinx_book_theme", MATHJAX_PACKAGE):
        if importlib.util.find_spec(name) is None:
            raise TitoError(f"`tito book` needs the docs extra ({name} is not installed): pip install -e \".[docs]\"")


# --- chapters ---------------------------------------------------------------------------------------------


def executed(ws: Workspace, module: Module):
    """The module's notebook, hidden checks removed, run top to bottom with its solutions (outputs in the cells),
    in a folder of its own with the course's answers to its checks beside it, as a student's release has them: so
    every check cell compares and says "all N checks passed", and one that does not stops the build."""
    import nbformat

    from tito.grading.generate import ship_expected
    from tito.module_checks import execute_notebook

    nb = nbformat.read(module.notebook, as_version=4)
    _nbgrader_step(ws, "ClearHiddenTests", nb)
    with tempfile.TemporaryDirectory(prefix="tito-book-") as folder, tempfile.TemporaryFile("w+") as kernel_log:
        copy = Path(folder) / module.notebook.name
        nbformat.write(nb, copy)
        ship_expected(ws, module, copy)
        stopped = execute_notebook(nb, Path(folder), tool_env(ws.root), ws.cell_timeout, kernel_log)
        kernel_log.seek(0)
        log = kernel_log.read()
    if stopped is not None:
        raise TitoError(f"{ws.rel(module.notebook)}: cell {stopped.index + 1} stopped the run: {stopped.why}")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and cell.execution_count is None and cell.source.strip():
            raise TitoError(f"{ws.rel(module.notebook)}: cell {index + 1} did not run {last_line(log)}".rstrip())
        error = next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)
        if error is not None:
            raise TitoError(f"{ws.rel(module.notebook)}: cell {index + 1} failed: {error.ename}: {error.evalue}")
    return nb


def student_view(ws: Workspace, nb):
    """The executed notebook as the student's release shows it: nbgrader's release steps replace each solution region
    with its stub (and the outputs of solution cells go: the stub prints nothing), and clear mark schemes."""
    from nbgrader.utils import is_solution

    for step in ("ClearSolutions", "ClearHiddenTests", "ClearMarkScheme"):
        _nbgrader_step(ws, step, nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and is_solution(cell):
            cell.outputs, cell.execution_count = [], None
    return nb


def _nbgrader_step(ws: Workspace, name: str, nb):
    "Apply nbgrader's preprocessor `name`, configured as `tito nbgrader generate` configures it, to `nb` in place."
    from nbgrader import preprocessors

    from tito.grading.setup import nbgrader_config

    getattr(preprocessors, name)(config=nbgrader_config(ws)).preprocess(nb, {})


def write_notebook(nb, path: Path):
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


# --- pages ------------------------------------------------------------------------------------------------


def write_pages(ws: Workspace, src: Path, modules: list):
    """The front page, the guides, the command reference, the API reference, the site's CSS and MathJax, and
    Sphinx's conf.py, into `src` (the chapters are there already)."""
    for guide in GUIDES:
        if (ws.root / guide).is_file():
            (src / guide).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ws.root / guide, src / guide)
    (src / "index.md").write_text(landing_page(ws, modules), encoding="utf-8")
    (src / "tito-commands.md").write_text(command_reference(), encoding="utf-8")
    (src / "api.rst").write_text(api_page(ws), encoding="utf-8")
    (src / "favicon.svg").write_text(FAVICON, encoding="utf-8")
    assets = src / "_assets"
    shutil.copytree(ASSETS, assets, ignore=shutil.ignore_patterns("*.md"))
    mathjax = Path(importlib.util.find_spec(MATHJAX_PACKAGE).origin).parent / "static" / "mathjax"
    for name in MATHJAX_FILES:
        copy = shutil.copytree if (mathjax / name).is_dir() else shutil.copyfile
        (assets / "mathjax" / name).parent.mkdir(parents=True, exist_ok=True)
        copy(mathjax / name, assets / "mathjax" / name)
    title = ws.settings.get("course", "title", fallback="TinyTorch")
    project = project_table(ws)
    author = ", ".join(a["name"] for a in project.get("authors", []) if "name" in a) or title
    (src / "conf.py").write_text(CONF.format(title=title, author=author, repository=repository(ws)), encoding="utf-8")


def project_table(ws: Workspace) -> dict:
    "pyproject.toml's [project] table."
    import tomllib

    return tomllib.loads((ws.root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})


def repository(ws: Workspace) -> str:
    "The course's repository (pyproject.toml's [project.urls] Repository)."
    url = project_table(ws).get("urls", {}).get("Repository")
    if not url:
        raise TitoError("pyproject.toml has no [project.urls] Repository for the book's front page")
    return url


def readme_sections(text: str) -> tuple[str, dict[str, str]]:
    "The README's title block (its `#` heading and what follows it) and its `##` sections by heading."
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return parts[0].strip(), {heading.strip(): body.strip() for heading, body in zip(parts[1::2], parts[2::2])}


def hours(module: Module) -> tuple[int, int]:
    "The module's time in hours, low and high, from its notebook's header (`**Time:** 3–4 hours`)."
    found = HOURS.search(module.notebook.read_text(encoding="utf-8"))
    if found is None:
        raise TitoError(f"{module.notebook.name}: its header gives no `**Time:** N–M hours` for the front page")
    return int(found.group(1)), int(found.group(2))


def chapter_title(module: Module) -> str:
    "The chapter's title from its notebook's first heading (`# Module 05: Attention` gives `Attention`)."
    import nbformat

    first = nbformat.read(module.notebook, as_version=4).cells[0].source
    found = re.search(r"^# (?:Module \d+: )?(.+)$", first, flags=re.MULTILINE)
    return found.group(1).strip() if found else module.name


def landing_page(ws: Workspace, modules: list) -> str:
    """The front page (book_assets/index.md): what the reader builds, the path with each chapter's hours, the
    starts, and the README's paths and capstone."""
    _, sections = readme_sections((ws.root / "README.md").read_text(encoding="utf-8"))
    missing = [h for h in LANDING_SECTIONS if h not in sections]
    if missing:
        raise TitoError(f"README.md has no section `## {missing[0]}` for the book's front page")
    rows = ["| | chapter | time |", "|---|---|---|"]
    for m in modules:
        low, high = hours(m)
        rows.append(f"| {m.number} | [{chapter_title(m)}]({ws.rel(m.notebook)}) | {low}–{high} h |")
    low, high = (sum(h) for h in zip(*(hours(m) for m in modules)))
    page = (ASSETS / "index.md").read_text(encoding="utf-8").format(
        title=ws.settings.get("course", "title", fallback="TinyTorch"),
        description=project_table(ws).get("description", ""), repository=repository(ws),
        hours_low=low, hours_high=high, course_table="\n".join(rows),
        paths=sections["Which path are you on?"], capstone=sections["The capstone"])
    guides = [g[:-3] for g in GUIDES if (ws.root / g).is_file()]
    chapters = [str(ws.rel(m.notebook))[:-len(".ipynb")] for m in modules]
    return "\n\n".join([page, _toctree("Chapters", chapters), _toctree("Guides", guides),
                         _toctree("Reference", ["tito-commands", "api"])]) + "\n"


def command_reference() -> str:
    "Every `tito` command with its options, from the command line itself (its help texts)."
    import click
    import typer

    from tito.cli import app

    lines = ["# The `tito` commands", "", "Generated from `tito`'s own help as this book was built; "
             "`tito COMMAND --help` says the same.", ""]

    def walk(command, path):
        ctx = click.Context(command, info_name=" ".join(path))
        if hasattr(command, "list_commands"):  # a group, lazy ones included
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])
            return
        lines.extend([f"## `{' '.join(path)}`", "", (command.help or "").strip(), "", "```text",
                      command.get_usage(ctx)])
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record:
                lines.append(f"  {record[0]:<28} {record[1]}")
        lines.extend(["```", ""])

    walk(typer.main.get_command(app), ["tito"])
    return "\n".join(lines)


def _toctree(caption: str, entries: list[str]) -> str:
    return "\n".join(["```{toctree}", f":caption: {caption}", ":hidden:", "", *entries, "```"])


def api_modules(ws: Workspace) -> list[str]:
    """The package's public modules, dotted, in course order (each module's exports as its notebook lists them); a
    package whose `__init__` a notebook exports (`tinytorch.perf`) is one of them, a hand-written `__init__` is not."""
    from tito.notebooks import exported_files

    exported = [f for m in ws.modules() for f in exported_files(ws.lib_dir, m.notebook)]
    names = []
    for path in exported + sorted(set(ws.lib_dir.rglob("*.py")) - set(exported)):
        parts = path.relative_to(ws.lib_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            if path not in exported:
                continue
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            names.append(".".join(parts))
    return names


def api_page(ws: Workspace) -> str:
    """An autodoc page with a section per public module of the package. A package's section shows what its `__init__`
    defines, not the names it re-exports from its modules (they have sections of their own)."""
    lines = ["API reference", "=============", "",
             f"Generated from the docstrings of ``{ws.lib_dir.name}`` as this book was built.", ""]
    for name in api_modules(ws):
        package = (ws.lib_dir.parent.joinpath(*name.split(".")) / "__init__.py").is_file()
        lines += [f"``{name}``", "-" * (len(name) + 4), "", f".. automodule:: {name}", "   :members:",
                  *(["   :ignore-module-all:"] if package else []), ""]
    return "\n".join(lines)


def sphinx(ws: Workspace, src: Path, out: Path, doctrees: Path) -> list[str]:
    """Sphinx's html builder (plain .html files: relative links that work from file:// and any static host).
    Returns its warnings."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(doctrees), str(src), str(out)]
    done = subprocess.run(cmd, cwd=src, env=tool_env(ws.root), capture_output=True, text=True)
    if done.returncode != 0:
        raise TitoError(f"sphinx could not build the book: {last_line(done.stderr or done.stdout)}")
    return [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]


def sphinx_setup(app):
    "conf.py's `setup`: docstrings are read as the course writes them."
    app.connect("autodoc-process-docstring", markdown_code)


def markdown_code(app, what, name, obj, options, lines: list[str]):
    """The package's docstrings are plain text with markdown code (nbdev's): `x` is code, and `|x|`, `*args` or
    `clip_grad_norm_` are no reST markup."""
    lines[:] = ["".join(f"``{part[1:-1]}``" if part.startswith("`") else PLAIN_MARKUP.sub(r"\\\1", part)
                        for part in MARKDOWN_CODE.split(line)) for line in lines]


# --- serving ----------------------------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def server(folder: Path, port: int) -> http.server.ThreadingHTTPServer:
    "An HTTP server for `folder` on 127.0.0.1:`port` (0: any free port); call serve_forever() on it."
    if not (Path(folder) / "index.html").is_file():
        raise TitoError(f"{folder} holds no built book (no index.html); run `tito book build` first")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        raise TitoError(f"cannot serve on 127.0.0.1:{port}: {e.strerror}") from None
