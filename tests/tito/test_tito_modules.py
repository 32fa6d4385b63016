"""`tito module list` and `tito module status`, module ids, and how tito finds the workspace."""
import re

import pytest

from tito.workspace import TitoError, Workspace
from tito_helpers import cells, run_tito


def header_of_module_01(root):
    "Title, difficulty and time from the notebook's first cell, read with plain regular expressions."
    text = "".join(cells(root)[0]["source"])
    title = re.search(r"^# Module 01: (.+)$", text, re.M).group(1).strip()
    difficulty = re.search(r"^\*\*Difficulty:\*\* (.+)$", text, re.M).group(1).strip()
    time = re.search(r"^\*\*Time:\*\* (.+)$", text, re.M).group(1).strip()
    return title, difficulty, time


def row_of(output: str, number: str) -> str:
    "The table row that starts with module `number`."
    rows = [line for line in output.splitlines() if re.match(rf"^\W*{number}\b", line)]
    assert rows, f"no row for module {number} in:\n{output}"
    return rows[0]


def test_list_shows_module_01_with_its_header(shared_course):
    result = run_tito(shared_course, "module", "list")
    assert result.returncode == 0, result.stderr
    row = row_of(result.stdout, "01")
    for field in ("01_tensor", *header_of_module_01(shared_course)):
        assert field in row, f"{field!r} missing from {row!r}"


def test_list_finds_every_module_folder(course):
    (course / "modules" / "09_probe").mkdir()
    result = run_tito(course, "module", "list")
    assert result.returncode == 0, result.stderr
    assert "09_probe" in row_of(result.stdout, "09")
    assert "has no notebook" in result.stdout, "a module without a notebook should say so in the list"


def test_status_shows_export_state_and_no_progress_yet(shared_course):
    result = run_tito(shared_course, "module", "status")
    assert result.returncode == 0, result.stderr
    row = row_of(result.stdout, "01")
    title, difficulty, time = header_of_module_01(shared_course)
    assert title in row and difficulty in row and time in row
    assert "yes" in row, "module 01 is exported in the committed tree"
    assert "never completed" in row


def test_status_says_no_when_the_exported_file_is_missing(course):
    (course / "tinytorch" / "core" / "tensor.py").unlink()
    row = row_of(run_tito(course, "module", "status").stdout, "01")
    assert re.search(r"\bno\b", row) and "yes" not in row, row


@pytest.mark.parametrize("ident", ["1", "01", "01_tensor", "tensor"])
def test_module_ids(shared_course, ident):
    assert Workspace.find(shared_course).module(ident).name == "01_tensor"


def test_unknown_module_id_names_the_known_ones(shared_course):
    with pytest.raises(TitoError, match=r"unknown module '42'.*01_tensor"):
        Workspace.find(shared_course).module("42")


def test_root_option_and_env_from_another_folder(shared_course, tmp_path):
    by_option = run_tito(shared_course, "--root", str(shared_course), "module", "list", cwd=tmp_path)
    by_env = run_tito(shared_course, "module", "list", cwd=tmp_path, env={"TITO_ROOT": str(shared_course)})
    for result in (by_option, by_env):
        assert result.returncode == 0, result.stderr
        assert "01_tensor" in result.stdout


def test_no_workspace_is_a_one_line_error(shared_course, tmp_path):
    result = run_tito(shared_course, "module", "list", cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and "no TinyTorch workspace" in lines[0], result.stderr


def test_workspace_is_found_from_a_subfolder(shared_course):
    result = run_tito(shared_course, "module", "list", cwd=shared_course / "modules" / "01_tensor")
    assert result.returncode == 0 and "01_tensor" in result.stdout, result.stderr
