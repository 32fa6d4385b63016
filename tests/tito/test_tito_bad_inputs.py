"""Bad input is one clear line, a non-zero exit, and nothing changed on disk: the milestone's text, --out,
--max-chars and --resume; `module reset` on a read-only modules/; `module export --all` with a broken later module."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tito.student_workspace import mark_student_settings
from tito_helpers import assert_one_line_error, notebook_path, run_tito, tree_digest

TINY = ["--plain", "--steps", "4", "--batch-size", "2", "--block-size", "8", "--embed-dim", "16", "--num-layers", "1",
        "--num-heads", "2", "--eval-interval", "2", "--eval-iters", "1", "--sample-tokens", "5"]


def _files(folder) -> dict:
    return {k: v for k, v in tree_digest(folder).items() if not k.startswith(".tito")}


@pytest.fixture(scope="module")
def inputs(shared_course):
    "A folder of bad inputs inside the shared course copy."
    folder = shared_course / "inputs"
    folder.mkdir(exist_ok=True)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.dat").write_bytes(bytes(range(256)) * 8)
    (folder / "utf16.txt").write_text("to be or not to be " * 40, encoding="utf-16")
    (folder / "a-file").write_text("not a folder")
    (folder / "runs" / "corrupt").mkdir(parents=True, exist_ok=True)
    (folder / "runs" / "corrupt" / "ckpt.npz").write_bytes(b"PK\x03\x04 not really a zip file")
    return folder


MILESTONE_CASES = {
    "empty text": (["--text", "inputs/empty.txt"], ["inputs/empty.txt is empty"]),
    "binary text": (["--text", "inputs/binary.dat"], ["is not UTF-8 text", "binary"]),
    "UTF-16 text": (["--text", "inputs/utf16.txt"], ["is UTF-16 text", "UTF-8"]),
    "missing text": (["--text", "inputs/nowhere.txt"], ["no such file"]),
    "--out is a file": (["--out", "inputs/a-file"], ["--out inputs/a-file is a file"]),
    "--max-chars 0": (["--max-chars", "0"], ["--max-chars must be at least 1", "not 0"]),
    "--max-chars -5": (["--max-chars", "-5"], ["--max-chars must be at least 1", "not -5"]),
    "corrupt checkpoint": (["--resume", "--out", "inputs/runs/corrupt"], ["is damaged or not a checkpoint"]),
    "no checkpoint": (["--resume", "--out", "inputs/runs/none"], ["no checkpoint at"]),
}


@pytest.mark.parametrize("case", list(MILESTONE_CASES))
def test_milestone_bad_input_is_one_line(shared_course, inputs, case):
    args, needles = MILESTONE_CASES[case]
    before = _files(shared_course)
    result = run_tito(shared_course, "milestone", "run", "gpt", *args, *TINY)
    assert_one_line_error(result, *needles)
    assert "allow_pickle" not in result.stderr
    assert _files(shared_course) == before


def test_resume_refuses_a_changed_text(course):
    text = course / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40, encoding="utf-8")
    first = run_tito(course, "milestone", "run", "gpt", "--text", "text.txt", "--out", "run", "--stop-at", "2", *TINY)
    assert first.returncode == 0, first.stdout + first.stderr
    text.write_text("the lazy dog jumps over the quick brown fox. " * 40, encoding="utf-8")  # same characters
    before = _files(course)
    assert_one_line_error(run_tito(course, "milestone", "run", "gpt", "--resume", "--out", "run", *TINY),
                          "the text is not the one this run was trained on", "SHA-256")
    assert _files(course) == before
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40, encoding="utf-8")
    done = run_tito(course, "milestone", "run", "gpt", "--resume", "--out", "run", *TINY)
    assert done.returncode == 0 and "resuming from run/ckpt.npz at step 2 of 4" in done.stdout, done.stderr


def _student_workspace(course):
    "The course copy made a student workspace (settings) whose module 01 notebook differs from its release copy."
    settings = course / "settings.ini"
    settings.write_text(mark_student_settings(settings.read_text(encoding="utf-8")), encoding="utf-8")
    release = course / "release" / "01_tensor"
    release.mkdir(parents=True)
    shutil.copy2(notebook_path(course), release / "01_tensor.ipynb")
    nb = json.loads(notebook_path(course).read_text(encoding="utf-8"))
    nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"]) + "\nmy own notes"
    notebook_path(course).write_text(json.dumps(nb, indent=1), encoding="utf-8")


def test_reset_on_a_read_only_modules_folder_is_one_line(course):
    _student_workspace(course)
    before = tree_digest(course)
    env = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    command = [sys.executable, "-m", "tito", "module", "reset", "01"]
    if os.geteuid() == 0:  # root writes through permissions: make the folder a read-only mount instead
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            pytest.skip("as root, a read-only folder needs bubblewrap (apt-get install bubblewrap)")
        modules = str(course / "modules")
        command = [bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", modules, modules,
                   "--chdir", str(course), "--", *command]
        result = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, timeout=120)
    else:
        folder = course / "modules" / "01_tensor"
        folder.chmod(0o555)
        try:
            result = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, timeout=120)
        finally:
            folder.chmod(0o755)
    assert_one_line_error(result, "cannot reset module 01", "modules/01_tensor is not writable", "nothing was changed")
    assert tree_digest(course) == before, "a failed reset leaves no backup and no partial file"


def test_export_all_blames_the_notebook_that_fails(course):
    path = notebook_path(course, "02_autograd")
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith("#| export"))
    cell["source"] = "".join(cell["source"]) + "\n_broken_at_import = 1 / 0\n"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    before = tree_digest(course / "tinytorch")
    assert_one_line_error(run_tito(course, "module", "export", "--all"), "modules/02_autograd/02_autograd.ipynb",
                          "ZeroDivisionError")
    assert tree_digest(course / "tinytorch") == before
