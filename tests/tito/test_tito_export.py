"""`tito module export`: the same files as nbdev-export, and nothing changes when anything fails."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tito_helpers import REPO, assert_one_line_error, cells, edit_notebook, notebook_path, run_tito, tree_digest

DOCSTRING = '"a * b, elementwise, with broadcasting."'


def test_export_01_reproduces_the_committed_module(course):
    committed = subprocess.run(["git", "show", "HEAD:tinytorch/core/tensor.py"], cwd=REPO, capture_output=True,
                               check=True).stdout
    result = run_tito(course, "module", "export", "01")
    assert result.returncode == 0, result.stderr
    assert "exported modules/01_tensor/01_tensor.ipynb -> tinytorch/core/tensor.py" in result.stdout
    assert "tinytorch/core/tensor.py" not in result.stdout.split("changed:")[-1].split(), "nothing to change"
    assert (course / "tinytorch" / "core" / "tensor.py").read_bytes() == committed


def test_export_of_a_changed_notebook_matches_nbdev_export(course, tmp_path):
    edit_notebook(course, DOCSTRING, '"a * b, elementwise (changed by the tito tests)."')
    other = tmp_path / "other"
    shutil.copytree(course, other)
    nbdev_export = Path(sys.executable).parent / "nbdev-export"
    env = {k: v for k, v in os.environ.items() if k != "IN_TEST"}  # nbdev-export does nothing under IN_TEST
    subprocess.run([str(nbdev_export)], cwd=other, check=True, capture_output=True, env=env)

    result = run_tito(course, "module", "export", "01", env={"IN_TEST": "1"})  # which silences nbdev_export
    assert result.returncode == 0, result.stderr
    assert "tinytorch/core/tensor.py" in result.stdout.split("changed:")[-1]
    assert "changed by the tito tests" in (course / "tinytorch" / "core" / "tensor.py").read_text()
    assert tree_digest(course / "tinytorch") == tree_digest(other / "tinytorch")
    assert (course / "modules" / "llms.txt").exists() == (other / "modules" / "llms.txt").exists()


def test_export_of_one_module_leaves_the_other_notebooks_alone(course):
    other = sorted(p.name for p in (course / "modules").iterdir() if p.is_dir() and p.name[:2].isdigit())[1:2]
    if not other:
        pytest.skip("the course has a single module")
    source = "".join(cells(course, other[0])[1]["source"])
    target = re.search(r"#\| default_exp (\S+)", source).group(1)
    edit_notebook(course, f"#| default_exp {target}", f"#| default_exp {target}_elsewhere", name=other[0])
    result = run_tito(course, "module", "export", "01")
    assert result.returncode == 0, result.stderr
    assert not list((course / "tinytorch").rglob("*_elsewhere.py")), f"{other[0]} was exported too"


def test_export_all(course):
    result = run_tito(course, "module", "export", "--all")
    assert result.returncode == 0, result.stderr
    assert "exported modules/01_tensor/01_tensor.ipynb -> tinytorch/core/tensor.py" in result.stdout


def _missing_notebook(root):
    notebook_path(root).unlink()


def _invalid_json(root):
    notebook_path(root).write_text('{"cells": [', encoding="utf-8")


def _no_default_exp(root):
    edit_notebook(root, "#| default_exp core.tensor", "# the directive was here")


def _syntax_error(root):
    edit_notebook(root, "out = a.data * b.data", "out = a.data *+* b.data")


def _import_error(root):
    edit_notebook(root, "def mul(a, b) -> Tensor:", "undefined_at_import + 1\n\n\ndef mul(a, b) -> Tensor:")


BAD_INPUTS = {  # case: (how to break the copy, module id, words the one-line error must contain)
    "unknown module": (None, "99", ["unknown module '99'", "01_tensor"]),
    "missing notebook": (_missing_notebook, "01", ["01_tensor.ipynb does not exist"]),
    "invalid JSON": (_invalid_json, "01", ["01_tensor.ipynb is not valid JSON", "line 1"]),
    "no default_exp": (_no_default_exp, "01", ["no `#| default_exp`", "first code cell"]),
    "syntax error": (_syntax_error, "01", ["SyntaxError", "grade_id `arithmetic`", "*+*"]),
    "import error": (_import_error, "01_tensor", ["grade_id `arithmetic`", "NameError", "undefined_at_import"]),
}


@pytest.mark.parametrize("command", ["export", "complete"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_and_leaves_the_package_alone(course, case, command):
    breaker, ident, needles = BAD_INPUTS[case]
    if breaker:
        breaker(course)
    before = tree_digest(course / "tinytorch")
    result = run_tito(course, "module", command, ident)
    assert_one_line_error(result, *needles)
    assert tree_digest(course / "tinytorch") == before
    assert not (course / ".tito" / "progress.json").exists(), "a failed export records nothing"


def test_export_needs_a_module_or_all(shared_course):
    assert_one_line_error(run_tito(shared_course, "module", "export"), "--all")
