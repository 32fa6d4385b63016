"""`tito module complete`'s tables of checks: readable at 80 columns (no terminal), skipped PyTorch comparisons in one
line."""
import io

import pytest
from rich.console import Console

from tito import cli
from tito.testing import Checks, Outcome

LONG = ("check 'a * b': expected float32 (2, 2) [10., 40., 30., 80.], received float32 (2, 2) [11., 22., 33., 44.]; "
        "check 'a - b': expected float32 (2, 2) [-9., -18., -27., -36.], received float32 (2, 2) [11., 22., 33., 44.]")
CHECKS = Checks([
    Outcome("Exercise 1: the constructor (grade_id `as-array`)", "passed"),
    Outcome("Exercise 2: elementwise arithmetic (grade_id `arithmetic`)", "failed", LONG),
    Outcome("test_tensor_oracle.py", "skipped", "PyTorch is not installed (the `oracle` extra)"),
    Outcome("test_losses_oracle.py", "skipped", "PyTorch is not installed (pip install -e '.[oracle]')"),
    Outcome("test_probe", "skipped", "probe: a skipped test is reported with its reason"),
])


def shown(monkeypatch, width: int) -> str:
    buffer = io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=buffer, width=width, highlight=False, color_system=None))
    cli._show_checks("graded checks", CHECKS, verbose=False)
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 200])
def test_every_name_and_value_is_shown_whole(monkeypatch, width):
    text = shown(monkeypatch, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), text
    flat = " ".join(line.strip(" │┃") for line in lines)
    flat = " ".join(flat.split())
    for whole in ("Exercise 2: elementwise arithmetic (grade_id `arithmetic`)", "[11., 22., 33., 44.]",
                  "probe: a skipped test is reported with its reason"):
        assert whole in flat, f"{whole!r} is cut or missing at {width} columns:\n{text}"
    if width == 80:
        assert not any(c in text for c in "┃│━"), f"at 80 columns, rows are blocks of lines, not a table:\n{text}"


def test_skipped_torch_comparisons_are_one_line(monkeypatch):
    text = shown(monkeypatch, 200)
    assert "2 comparisons with PyTorch skipped: torch is not installed" in text, text
    assert "oracle" not in text, f"no row per skipped PyTorch comparison:\n{text}"
