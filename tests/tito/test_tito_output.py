"""What tito prints: `tito module complete`'s tables of checks readable at 80 columns (no terminal), skipped PyTorch
comparisons in one line, and text printed as it is (a `[` in a path is not rich markup)."""
import io

import pytest
from rich.console import Console

from tito import output
from tito.commands import module
from tito.module_checks import Checks, Outcome
from tito_helpers import run_tito

LONG = ("check 'a * b': expected float32 (2, 2) [[10., 40.], [30., 80.]], received float32 (2, 2) [[11., 22.], [33., 44.]]; "
        "check 'a - b': expected float32 (2, 2) [[-9., -18.], [-27., -36.]], received float32 (2, 2) [[11., 22.], [33., 44.]]")
CHECKS = Checks([
    Outcome("Exercise 1: the constructor (grade_id `as-array`)", "passed"),
    Outcome("Exercise 2: elementwise arithmetic (grade_id `arithmetic`)", "failed", LONG),
    Outcome("test_tensor_oracle.py", "skipped", "PyTorch is not installed (.venv/bin/pip install -e '.[course]')"),
    Outcome("test_losses_oracle.py", "skipped", "PyTorch is not installed (.venv/bin/pip install -e '.[course]')"),
    Outcome("test_probe", "skipped", "probe: a skipped test is reported with its reason"),
])


def printed(monkeypatch, width: int, show) -> str:
    "What `show()` prints on tito's results console, `width` columns wide, without a terminal."
    buffer = io.StringIO()
    monkeypatch.setattr(output, "out", Console(file=buffer, width=width, highlight=False, color_system=None))
    show()
    return buffer.getvalue()


def shown(monkeypatch, width: int) -> str:
    return printed(monkeypatch, width, lambda: module.show_checks("graded checks", CHECKS, verbose=False))


@pytest.mark.parametrize("width", [80, 200])
def test_every_name_and_value_is_shown_whole(monkeypatch, width):
    text = shown(monkeypatch, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), text
    flat = " ".join(line.strip(" │┃") for line in lines)
    flat = " ".join(flat.split())
    for whole in ("Exercise 2: elementwise arithmetic (grade_id `arithmetic`)", "[[11., 22.], [33., 44.]]",
                  "probe: a skipped test is reported with its reason"):
        assert whole in flat, f"{whole!r} is cut or missing at {width} columns:\n{text}"
    if width == 80:
        assert not any(c in text for c in "┃│━"), f"at 80 columns, rows are blocks of lines, not a table:\n{text}"


def test_skipped_torch_comparisons_are_one_line(monkeypatch):
    text = shown(monkeypatch, 200)
    assert "2 PyTorch comparisons not run (no torch): .venv/bin/pip install -e '.[course]'" in text, text
    assert "_oracle.py" not in text, f"no row per skipped PyTorch comparison:\n{text}"


MARKUP = "modules/[red]x[/red] [bold]/01_tensor.ipynb"  # a folder a student may well name with brackets


@pytest.mark.parametrize("width", [80, 200])
def test_markup_in_a_path_prints_as_it_is(monkeypatch, width):
    def show():
        output.say(f"exported {MARKUP}")
        output.rule(MARKUP)
        output.table(["exercise or check", "result", "first failure"], [[MARKUP, ("failed", "red"), MARKUP]], MARKUP)

    text = printed(monkeypatch, width, show)
    flat = " ".join(" ".join(line.strip(" │┃─") for line in text.splitlines()).split())
    assert flat.count(MARKUP) == 5, f"a `[` in a path was read as markup at {width} columns:\n{text}"


def test_an_error_about_a_path_with_markup_prints_it_as_it_is(tmp_path):
    folder = tmp_path / "[red]course[bold]"
    folder.mkdir()
    done = run_tito(tmp_path, "--root", str(folder), "module", "list")
    assert done.returncode == 1 and f"error: {folder} is not a TinyTorch workspace" in done.stderr, done.stderr


def test_failures_come_first_and_passes_last(monkeypatch):
    text = shown(monkeypatch, 200)
    at = {what: text.index(what) for what in ("Exercise 2: elementwise", "probe: a skipped test", "Exercise 1: the constructor")}
    assert at["Exercise 2: elementwise"] < at["probe: a skipped test"] < at["Exercise 1: the constructor"], text
