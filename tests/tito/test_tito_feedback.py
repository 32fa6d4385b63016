"""What `tito module test` / `complete` tell a student: failures by exercise with the values compared, folded, the
way to see them in full; prerequisites; reset; time limits that hold and a one-line Ctrl-C."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from tito.module_checks import failure_reason
from tito_helpers import REPO, as_student, assert_one_line_error, edit_notebook, notebook_path, run_tito

ADD = "    out = a.data + b.data\n"
# The classic broadcasting bug: the smaller operand is lined up with the larger one from the left, not the right.
LEFT_ALIGNED_ADD = "    out = a.data + b.data.reshape(b.shape + (1,) * (a.ndim - b.ndim))\n"
ARITHMETIC = "Exercise 2: elementwise arithmetic"
# A demo cell that writes its kernel's pid, then ignores every interrupt (a bare `except` swallows KeyboardInterrupt).
STUBBORN_CELL = ("import os, time\nopen('kernel.pid', 'w').write(str(os.getpid()))\n"
                 "while True:\n    try:\n        time.sleep(.1)\n    except:\n        pass")


def real_suite(root, name="01_tensor"):
    "Put the committed test suite of module `name` back in a course copy (the fixtures use a probe suite)."
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD", f"tests/{name}"], cwd=REPO,
                             capture_output=True, check=True)
    shutil.rmtree(root / "tests" / name, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data")


def rows_with(output: str, text: str) -> list[str]:
    "The table rows (a wrapped row joined into one line) or other lines of `output` that contain `text`."
    lines, rows = [], []
    for line in output.splitlines():
        cells = line.split("│")[1:-1] if line.startswith("│") else None
        if cells and rows and not cells[1].strip():  # a wrapped row goes on: its result column is empty
            rows[-1] = [f"{a} {b.strip()}".strip() for a, b in zip(rows[-1], cells)]
        elif cells:
            rows.append([c.strip() for c in cells])
        else:
            lines.append(line)
    return [line for line in lines + [" │ ".join(r) for r in rows] if text in line]


def set_limit(root, key: str, seconds: int):
    settings = root / "settings.ini"
    text = settings.read_text()
    settings.write_text(re.sub(rf"(?m)^{key}\s*=.*$", f"{key} = {seconds}", text))


def add_cell_after(root, marker: str, source: str, name="01_tensor"):
    "Insert an ungraded code cell after the one cell whose source contains `marker`."
    path = notebook_path(root, name)
    nb = json.loads(path.read_text())
    index = next(i for i, c in enumerate(nb["cells"]) if marker in "".join(c["source"]))
    nb["cells"].insert(index + 1, {"cell_type": "code", "id": "stubborn", "metadata": {}, "execution_count": None,
                                   "outputs": [], "source": source})
    path.write_text(json.dumps(nb, indent=1))


def wait_until_gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


# --- failures a student can act on ----------------------------------------------------------------------------


@pytest.mark.parametrize("message, shown", [
    ("AssertionError: \nArrays are not equal\n\nMismatched elements: 1 / 4 (25%)\nMismatch at index:\n"
     " [1, 1]: 4.0 (ACTUAL), 5.0 (DESIRED)\nMax absolute difference among violations: 1.\n"
     " ACTUAL: array([[1., 2.],\n       [3., 4.]])\n DESIRED: array([[1., 2.],\n       [3., 5.]])",
     "Arrays are not equal (1 / 4 elements differ; at [1, 1]: expected 5.0, received 4.0): "
     "expected array([[1., 2.], [3., 5.]]), received array([[1., 2.], [3., 4.]])"),
    ("assert (False)\n +  where False = <function array_equal at 0x7f00aa>(array([[11., 12.],\\n       [23., 24.]]),"
     " [[11, 22], [13, 24]])\n +    where array([[11., 12.]]) = Tensor([[11., 12.]]).data",
     "assert array_equal(array([[11., 12.], [23., 24.]]), [[11, 22], [13, 24]])"),
    ("assert (2, 3) == (3,)\n  \n  At index 0 diff: 2 != 3\n  Use -v to get more diff",
     "assert (2, 3) == (3,) At index 0 diff: 2 != 3"),
    ("ValueError: add: shapes (2, 3) and (2,) do not broadcast", "ValueError: add: shapes (2, 3) and (2,) do not broadcast"),
])
def test_a_failure_message_keeps_the_values_on_one_line(message, shown):
    assert failure_reason(message) == shown


def test_a_broadcasting_bug_is_named_by_exercise_with_the_values_compared(course):
    real_suite(course)
    as_student(course)
    edit_notebook(course, ADD, LEFT_ALIGNED_ADD)
    result = run_tito(course, "module", "complete", "01")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and "cell 4" not in output

    # pytest: one row for the exercise, many failing tests folded into it, the first one's values shown
    pytest_part, graded_part = output.split("graded checks of")
    rows = rows_with(pytest_part, f"{ARITHMETIC} (grade_id `arithmetic`)")
    assert len(rows) == 1, pytest_part
    folded = re.search(r"(\d+) failed", rows[0])
    assert folded and int(folded.group(1)) > 1, rows[0]
    assert "test_" in rows[0] and "could not be broadcast" in rows[0], "the first failing test and its message"

    # the judge's verdict on the exercise: its checks by name, with the expected and the received values
    graded = [r for r in rows_with(graded_part, f"{ARITHMETIC} (grade_id `arithmetic`)") if "fix first" not in r]
    assert len(graded) == 1 and "failed" in graded[0], graded_part
    assert rows_with(graded_part, "fix first") == [f"fix first: {ARITHMETIC} (grade_id `arithmetic`)"], graded_part
    assert "check 'a + b': expected float32 (2, 2) [[11., 22.], [13., 24.]], received float32 (2, 2) [[11., 12.], " \
        "[23., 24.]]" in graded[0], graded[0]

    # how to see it all
    hint = rows_with(output, "to see each failure in full")
    assert len(hint) == 1 and "tito module test 01 --verbose" in hint[0], output
    one_test = re.search(r'python -m pytest "([^"]+)"', hint[0]).group(1)
    alone = subprocess.run([sys.executable, "-m", "pytest", one_test, "-q", "-p", "no:cacheprovider"], cwd=course,
                           capture_output=True, text=True, timeout=300,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert alone.returncode == 1 and "1 failed" in alone.stdout, alone.stdout + alone.stderr


def test_a_wrong_value_in_pytest_shows_expected_and_received(course):
    real_suite(course)
    edit_notebook(course, "    out = np.mean(a.data, axis=axis, keepdims=keepdims)\n",
                  "    out = np.sum(a.data, axis=axis, keepdims=keepdims) / a.shape[-1]\n")
    result = run_tito(course, "module", "complete", "01")
    rows = rows_with(result.stdout.split("graded checks of")[0], "Exercise 5: reductions (grade_id `reductions`)")
    assert len(rows) == 1 and re.search(r"\b\d+ failed", rows[0]), result.stdout
    assert re.search(r"expected array\(.*\d.*\), received array\(.*\d.*\)", rows[0]), rows[0]
    assert len([row for row in rows_with(result.stdout, " failed │")]) <= 3, "one bug: a row or two, not one per test"


def test_a_gradient_bug_is_blamed_on_its_own_exercise(course):
    "Every gradient test runs `backward` and the arithmetic rules; the failures are the mean rule's all the same."
    (course / ".tito").mkdir()
    (course / ".tito" / "progress.json").write_text(json.dumps({"modules": {"01": {"passed": True}}}))
    edit_notebook(course, "    count = a.size // max(out.size, 1) if a.size else 1\n", "    count = a.shape[-1]\n",
                  name="02_autograd")
    assert run_tito(course, "module", "export", "02").returncode == 0
    result = run_tito(course, "module", "test", "02")
    pytest_part = result.stdout.split("graded checks of")[0]
    failing = [row for row in rows_with(pytest_part, " failed │")]
    assert len(failing) == 1, pytest_part
    assert failing[0].startswith("Exercise 4: reductions (grade_id `reduction-gradients`)"), failing[0]
    assert "expected" in failing[0] and "received" in failing[0], failing[0]


def test_verbose_lists_every_failing_test_with_its_traceback(course):
    real_suite(course)
    as_student(course)
    edit_notebook(course, ADD, LEFT_ALIGNED_ADD)
    assert run_tito(course, "module", "export", "01").returncode == 0
    short = run_tito(course, "module", "test", "01")
    verbose = run_tito(course, "module", "test", "01", "--verbose")
    assert verbose.returncode == 1
    failed = int(re.search(r"pytest tests/01_tensor/: \d+ passed, (\d+) failed", verbose.stdout).group(1))
    rows = [row for row in rows_with(verbose.stdout, "test_") if re.search(r"│ failed │", row)]
    assert len(rows) == failed, verbose.stdout
    assert "tinytorch/core/tensor.py:" in verbose.stdout, "pytest's traceback, down to the student's code"
    assert "Cell In[" in verbose.stdout, "the kernel's traceback of the notebook cell that failed"
    assert "check 'a + b': expected float32 (2, 2) [[11., 22.], [13., 24.]], received float32 (2, 2) [[11., 12.], " \
        "[23., 24.]]" in verbose.stdout, "the judge's verdict in full, on one line (the table's column wraps it)"
    assert "to see each failure in full" not in verbose.stdout
    assert len(verbose.stdout.splitlines()) > len(short.stdout.splitlines())


def test_a_test_depending_on_an_incomplete_module_says_so_in_one_line(course):
    assert_one_line_error(run_tito(course, "module", "test", "02"), "complete module(s) 01 first",
                          "module 02 builds on them")


# --- reset ----------------------------------------------------------------------------------------------------


def test_reset_marks_the_module_not_complete(course):
    as_student(course)  # kind = student, and a release copy of module 01 with the course's answers
    assert run_tito(course, "module", "complete", "01").returncode == 0
    row = rows_with(run_tito(course, "module", "status").stdout, "Tensor")[0]
    assert "passed" in row and "yes" in row, row

    edit_notebook(course, "out = a.data * b.data", "out = a.data * b.data  # my version")
    time.sleep(1.1)  # the export and the reset are told apart by the second
    reset = run_tito(course, "module", "reset", "01")
    assert reset.returncode == 0, reset.stderr

    status = run_tito(course, "module", "status")
    row = rows_with(status.stdout, "Tensor")[0]
    assert "passed" not in row and "not complete" in row and "yes" not in row, row
    progress = json.loads((course / ".tito" / "progress.json").read_text())["modules"]["01"]
    assert progress["passed"] is False and progress["reset_at"]
    assert_one_line_error(run_tito(course, "module", "test", "02"), "complete module(s) 01 first")


# --- time limits and Ctrl-C -----------------------------------------------------------------------------------


def test_a_cell_that_ignores_the_interrupt_is_stopped_at_the_time_limit(course):
    limit = 30  # every cell runs under it: at 3 s, a check cell before the stubborn one ran over on a busy machine
    set_limit(course, "cell_timeout", limit)
    add_cell_after(course, "col = Tensor(", STUBBORN_CELL)
    # The bound is the limit plus a generous margin for pytest, the kernel start and a loaded machine.
    result = run_tito(course, "module", "test", "01", timeout=limit + 240)
    assert result.returncode == 1
    row = [r for r in rows_with(result.stdout, "import os, time") if r.startswith("the cell under")]
    assert len(row) == 1 and "failed" in row[0], result.stdout
    assert f"ran over cell_timeout ({limit} s) and ignored the interrupt" in row[0]
    assert "the cell under" not in result.stdout.split("import os, time")[1], "the run stopped there: nothing after it"
    assert "passed" in rows_with(result.stdout, f"{ARITHMETIC} (grade_id `arithmetic`)")[0], \
        "the judge's verdicts do not depend on the notebook's kernel"
    pid = int((course / "modules" / "01_tensor" / "kernel.pid").read_text())
    assert wait_until_gone(pid), "the kernel was left running"


def test_a_kernel_that_dies_is_named_at_its_cell(course):
    add_cell_after(course, "col = Tensor(", "import os\nos._exit(1)")
    result = run_tito(course, "module", "test", "01")
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    row = rows_with(result.stdout, "the kernel died while this cell ran")
    assert len(row) == 1 and row[0].startswith("the cell under 'Exercise 2: elementwise arithmetic' that starts "
                                               "`import os`"), result.stdout
    assert "passed" in rows_with(result.stdout, f"{ARITHMETIC} (grade_id `arithmetic`)")[0], \
        "the judge's verdicts do not depend on the notebook's kernel"


def _interrupt_when(root, marker, *args):
    """Start tito as a terminal would (its own process group, Ctrl-C's default action even when this test runs in
    the background, where SIGINT is ignored), Ctrl-C it once `marker` exists, and wait."""
    env = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    env.update(COLUMNS="200", NO_COLOR="1")
    tito = subprocess.Popen([sys.executable, "-m", "tito", *args], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert tito.poll() is None and time.monotonic() < deadline, "tito ended before it reached the marker"
            time.sleep(0.2)
        time.sleep(0.5)
        os.killpg(tito.pid, signal.SIGINT)
        out, err = tito.communicate(timeout=120)
    finally:
        if tito.poll() is None:
            tito.kill()
    return tito.returncode, out, err


def test_ctrl_c_during_the_notebook_checks_is_one_line(course):
    set_limit(course, "cell_timeout", 600)
    add_cell_after(course, "col = Tensor(", STUBBORN_CELL)
    pid_file = course / "modules" / "01_tensor" / "kernel.pid"
    code, out, err = _interrupt_when(course, pid_file, "module", "test", "01")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, err
    assert "interrupted (Ctrl-C) while the notebook checks ran modules/01_tensor/01_tensor.ipynb" in lines[0]
    assert "import os, time" in lines[0], "it names the cell that was running"
    assert "Traceback" not in out + err and "AssertionError" not in err and "Kernel is running" not in err
    assert wait_until_gone(int(pid_file.read_text())), "the kernel was left running"


def test_ctrl_c_during_pytest_is_one_line(course):
    marker = course / "pytest-started"
    (course / "tests" / "01_tensor" / "test_zz_slow.py").write_text(
        f"import time\n\ndef test_slow():\n    open({str(marker)!r}, 'w').close()\n    time.sleep(120)\n")
    code, out, err = _interrupt_when(course, marker, "module", "test", "01")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and lines == ["error: interrupted (Ctrl-C) while pytest ran tests/01_tensor/"], err
    assert "Traceback" not in out + err
