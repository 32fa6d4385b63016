"""`tito module test` and `tito module complete`: real results, failures by name, progress on disk."""
import json
import re

from tito_helpers import as_student, assert_one_line_error, cells, edit_notebook, notebook_path, run_tito, tree_digest

MUL = "out = a.data * b.data"


def graded_cells(root) -> list[str]:
    return [c["metadata"]["nbgrader"]["grade_id"] for c in cells(root)
            if c["metadata"].get("nbgrader", {}).get("grade")]


def progress(root) -> dict:
    return json.loads((root / ".tito" / "progress.json").read_text())["modules"]


def line_with(output: str, name: str) -> str:
    found = [line for line in output.splitlines() if name in line]
    assert found, f"{name} is not in:\n{output}"
    return found[0]


def judged(output: str) -> str:
    "The part of tito's output after pytest's: the judge's table, one verdict per exercise, and what follows."
    assert "graded checks of" in output, output
    return output[output.index("graded checks of"):]


def test_complete_01_passes_and_records_progress(course):
    as_student(course)
    result = run_tito(course, "module", "complete", "01")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "module 01 complete" in result.stdout
    assert "pytest tests/01_tensor/: 2 passed, 1 skipped" in result.stdout
    assert f"{len(graded_cells(course))} passed" in line_with(result.stdout, "graded checks of")
    assert "probe: a skipped test is reported with its reason" in result.stdout
    entry = progress(course)["01"]
    assert entry["passed"] is True and entry["completed_at"] == entry["last_run"]
    assert entry["tests"]["passed"] == 2 and entry["tests"]["skipped"] == 1 and entry["tests"]["failed"] == 0
    assert entry["notebook_checks"]["passed"] == len(graded_cells(course))

    status = run_tito(course, "module", "status")
    assert re.search(r"passed \d{4}-\d\d-\d\d", line_with(status.stdout, "Tensor")), status.stdout


def test_a_wrong_formula_fails_by_name(course):
    as_student(course)
    edit_notebook(course, MUL, "out = a.data + b.data")
    completed = run_tito(course, "module", "complete", "01")
    assert completed.returncode == 1
    assert "failed" in line_with(completed.stdout, "test_mul_values")
    assert "assert" in line_with(completed.stdout, "test_mul_values"), "the reason is the assertion, on one line"
    verdicts = judged(completed.stdout)
    arithmetic = line_with(verdicts, "(grade_id `arithmetic`)")
    assert "Exercise 2: elementwise arithmetic" in arithmetic and "failed" in arithmetic, verdicts
    assert "check 'a * b': expected float32 (2, 2) [[10., 40.], [30., 80.]], received float32 (2, 2) [[11., 22.]," \
        in arithmetic, "the judge names the check and the values it compared"
    assert "passed" in line_with(verdicts, "(grade_id `as-array`)")
    assert "module 01 is not complete yet" in completed.stdout
    assert completed.stderr.strip() == "error: module 01: 1 test failed, 1 check failed", completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    assert progress(course)["01"]["passed"] is False and progress(course)["01"]["tests"]["failed"] == 1

    tested = run_tito(course, "module", "test", "01")  # the package `complete` exported: the same verdicts
    assert tested.returncode == 1
    assert "failed" in line_with(judged(tested.stdout), "(grade_id `arithmetic`)")
    assert tested.stderr.strip() == "error: module 01 does not pass yet: 1 test failed, 1 check failed", \
        tested.stderr


def test_an_unfinished_exercise_is_named_not_traced(course):
    as_student(course)
    edit_notebook(course, MUL, "raise NotImplementedError()")
    result = run_tito(course, "module", "complete", "01")
    output = result.stdout + result.stderr
    assert result.returncode == 1
    assert output.splitlines()[1] == "exercise `arithmetic` not done yet", "listed before anything runs"
    assert "exercise `arithmetic` not done yet" in line_with(result.stdout, "test_mul_values")
    verdict = line_with(judged(result.stdout), "(grade_id `arithmetic`)")
    assert "failed" in verdict and "exercise `arithmetic` not done yet" in verdict, verdict
    assert "Traceback" not in output
    assert progress(course)["01"]["pending_exercises"] == ["arithmetic"]


def test_an_error_in_an_ungraded_cell_fails_the_notebook(course):
    "The notebook must run top to bottom: a demo cell that raises fails the check, named by its position."
    edit_notebook(course, "col = Tensor(", "raise RuntimeError('demo broke')\ncol = Tensor(")
    result = run_tito(course, "module", "test", "01")
    assert result.returncode == 1
    assert "RuntimeError: demo broke" in line_with(result.stdout, "demo broke")
    assert "failed" in line_with(result.stdout, "demo broke")


def test_tests_failing_on_one_unfinished_exercise_share_one_row(course):
    "Without -v, every test that fails because `arithmetic` is not done is summed up in one row."
    edit_notebook(course, MUL, "raise NotImplementedError()")
    edit_notebook(course, "out = a.data + b.data", "raise NotImplementedError()")
    result = run_tito(course, "module", "complete", "01")
    rows = [line for line in result.stdout.splitlines() if "exercise `arithmetic` not done yet" in line and "test_" in line]
    assert len(rows) == 1 and "2 failed" in rows[0] and "Exercise 2: elementwise arithmetic" in rows[0], result.stdout
    verbose = run_tito(course, "module", "test", "01", "-v")
    assert "test_add_values" in verbose.stdout and "test_mul_values" in verbose.stdout


def test_a_module_without_tests_is_not_a_pass(course):
    for test_file in (course / "tests" / "01_tensor").iterdir():
        test_file.unlink()
    (course / "tests" / "01_tensor").rmdir()
    result = run_tito(course, "module", "test", "01")
    assert result.returncode == 1
    assert "has no test suite (tests/01_tensor/ does not exist)" in result.stdout
    assert "no tests ran" in result.stderr


def _add_probe_module(root):
    "Module 09, a valid notebook after every real module."
    folder = root / "modules" / "09_probe"
    folder.mkdir()
    nb = json.loads(notebook_path(root).read_text())
    nb["cells"] = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Module 09: Probe"},
                   {"cell_type": "code", "id": "exp", "metadata": {}, "execution_count": None, "outputs": [],
                    "source": "#| default_exp core.probe"}]
    (folder / "09_probe.ipynb").write_text(json.dumps(nb))


def test_complete_refuses_to_skip_earlier_modules(course):
    _add_probe_module(course)
    before = tree_digest(course / "tinytorch")
    assert_one_line_error(run_tito(course, "module", "complete", "09"), "complete module(s) 01", "first")
    assert tree_digest(course / "tinytorch") == before


def test_complete_all_stops_at_the_first_failure(course):
    _add_probe_module(course)
    edit_notebook(course, MUL, "out = a.data + b.data")
    result = run_tito(course, "module", "complete", "--all")
    assert result.returncode == 1
    assert re.fullmatch(r"error: module 01: .*failed; stopped at module 01; not run: .*09", result.stderr.strip()), \
        result.stderr
    assert list(progress(course)) == ["01"]
