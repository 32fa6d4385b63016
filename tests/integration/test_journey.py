"""A student's whole journey, exactly as the guides say: a clone with the course's one install, `tito student init
../my-tinytorch --use-this-venv` (the self-learner's one environment; a student handed a workspace installs the same
`.[course]` in it), the course's own solutions filled into the release notebooks' stubs, `tito module complete` for
every module in order, then again for every module: all pass. It prints how long each `complete` took.

Slow (every module's notebook and test suite, twice), so it shares one workspace and one install.
"""
import re
import time
from pathlib import Path

import nbformat
import pytest

from course_copies import REPO, copy_course, make_venv, run
from tito import progress
from tito.workspace import Workspace

pytestmark = pytest.mark.slow
COURSE_INSTALL = '.venv/bin/pip install -e ".[course]"'
SELF_LEARNER = ["git clone", 'python3 -m venv .venv && .venv/bin/pip install -e ".[course]"',
                ".venv/bin/tito student init ../my-tinytorch --use-this-venv", "cd ../my-tinytorch", ".venv/bin/tito lab"]


def solution_cells(notebook: Path) -> dict:
    "grade_id -> source of each exercise cell of a notebook."
    nb = nbformat.read(notebook, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def fill_solutions(solution: Path, release: Path):
    "The release notebook at `release` with each exercise cell's source taken from the course notebook `solution`."
    answers = solution_cells(solution)
    nb = nbformat.read(release, as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = answers.pop(c.metadata["nbgrader"]["grade_id"])
    assert not answers, f"exercise cells {sorted(answers)} are not in the release {release}"
    nbformat.write(nb, release)


def shell_lines(markdown: str, after: str) -> list[str]:
    "The commands of the first ```bash block after the text `after`, without their comments."
    block = re.search(r"```bash\n(.*?)```", markdown[markdown.index(after):], re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_guides_install_once_with_the_course_set():
    "README's self-learner path is the one this journey takes; no guide asks for a second install mid-course."
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    steps = shell_lines(readme, "**A self-learner.**")
    assert [s for s in SELF_LEARNER if not any(line.startswith(s) for line in steps)] == [], steps
    assert [line for line in steps if "pip install" in line] == [SELF_LEARNER[1]], steps
    guide = (REPO / "docs" / "STUDENT_README.md").read_text(encoding="utf-8")
    installs = re.findall(r"pip install[^`\n]*", guide)
    assert installs == [COURSE_INSTALL.removeprefix(".venv/bin/")], installs
    for text in (readme, guide):
        assert not re.search(r"\.\[[^\]]*\b(oracle|fast)\b", text), "an extra that no longer exists"


def test_a_student_completes_every_module_as_the_guides_say(tmp_path_factory, capsys):
    home = tmp_path_factory.mktemp("home")
    course = copy_course(home / "tinytorch")                     # git clone ... && cd tinytorch
    bindir = make_venv(course.root)                              # python3 -m venv .venv && pip install -e ".[course]"
    made = run([bindir / "tito", "student", "init", "../my-tinytorch", "--use-this-venv"], course.root, timeout=1800)
    assert made.returncode == 0, made.stdout + made.stderr
    ws = Workspace.find(home / "my-tinytorch")
    tito = ws.root / ".venv" / "bin" / "tito"                    # cd ../my-tinytorch; the guide's .venv/bin/tito

    # one environment: the clone's, serving the workspace's own tito and tinytorch
    assert (ws.root / ".venv").resolve() == (course.root / ".venv").resolve()
    where = run([ws.root / ".venv" / "bin" / "python", "-c",
                 "import tinytorch, tito; print(tinytorch.__file__, tito.__file__)"], "/")
    assert where.stdout.split() == [str(ws.lib_dir / "__init__.py"), str(ws.root / "tito" / "__init__.py")], where
    # the workspace holds the release, the tests, tito, and an empty package
    assert ws.is_student and not course.is_student
    files = sorted(p.relative_to(ws.lib_dir).as_posix() for p in ws.lib_dir.rglob("*") if p.is_file())
    assert files == ["__init__.py", "core/__init__.py"]
    assert (ws.lib_dir / "__init__.py").read_bytes() == (course.lib_dir / "__init__.py").read_bytes()
    assert [m.name for m in ws.modules()] == [m.name for m in course.modules()]
    for mod in course.modules():
        release = course.released(mod).notebook.read_bytes()
        assert ws.module(mod.name).notebook.read_bytes() == release
        assert ws.released(mod).notebook.read_bytes() == release
        assert "### BEGIN SOLUTION" not in release.decode()
    assert (ws.root / "tests" / "01_tensor").is_dir() and not (ws.root / "tests" / "nbgrader").exists()
    for name in ("pyproject.toml", "tito/cli.py", "tools/nbsync.py"):
        assert (ws.root / name).is_file()
    assert (ws.root / "README.md").read_bytes() == (course.root / "docs" / "STUDENT_README.md").read_bytes()
    assert "release/" not in (ws.root / ".gitignore").read_text().split()  # reset's pristine copy is kept in git

    # nothing done yet: complete names every unfinished exercise
    first = run([tito, "module", "complete", "01"], ws.root, timeout=1800)
    assert first.returncode != 0 and "not complete" in first.stdout
    for gid in solution_cells(course.module("01").notebook):
        assert f"exercise `{gid}` not done yet" in first.stdout, gid

    for mod in ws.modules():
        fill_solutions(course.module(mod.name).notebook, mod.notebook)
    times, failed = {}, []
    for lap in ("in order", "again"):
        for mod in ws.modules():
            start = time.monotonic()
            done = run([tito, "module", "complete", mod.number], ws.root, timeout=3600)
            times[lap, mod.number] = time.monotonic() - start
            if done.returncode != 0 or f"module {mod.number} complete" not in done.stdout:
                failed.append(f"{lap}, module {mod.number}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    with capsys.disabled():
        print("\n`tito module complete` in the journey's workspace, seconds:")
        for number in (m.number for m in ws.modules()):
            print(f"  module {number}: {times['in order', number]:6.1f} in order, {times['again', number]:6.1f} again")
        print(f"  total: {sum(times.values()):.0f} s")
    assert not failed, "\n\n".join(failed)
    assert all(progress.is_complete(ws, m.number) for m in ws.modules())
    exported = ws.lib_dir / "core" / "tensor.py"
    assert exported.is_file() and "NotImplementedError()" not in exported.read_text()
