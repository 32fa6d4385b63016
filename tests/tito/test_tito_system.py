"""`tito system doctor`, `tito lab`, and plug-ins that are missing or broken."""
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tito import doctor
from tito.workspace import Workspace
from tito_helpers import assert_one_line_error, run_tito

DOCTOR_CHECKS = ["python", "numpy", "nbdev", "nbgrader", "jupyterlab", "nbclient", "typer", "rich", "workspace",
                 "nbdev config", "python3 kernel", "python bin folder", "alembic", "jupyter"]


def doctor_rows(output: str) -> dict:
    "check name -> its table row."
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 3 and cells[1] in DOCTOR_CHECKS:
            rows[cells[1]] = line
    return rows


def test_doctor_reports_every_check_ok(shared_course):
    result = run_tito(shared_course, "system", "doctor")
    rows = doctor_rows(result.stdout)
    assert set(rows) == set(DOCTOR_CHECKS), result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert all("│ ok " in row for row in rows.values()), result.stdout


def test_doctor_finds_an_nbdev_config_that_would_wipe_grading_metadata(course):
    pyproject = course / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('allowed_cell_metadata_keys = ["nbgrader"]',
                                                       "allowed_cell_metadata_keys = []"))
    check = doctor.check_nbdev_config(Workspace.find(course))
    assert not check.ok and "allowed_cell_metadata_keys" in check.detail and check.fix


def test_doctor_exits_non_zero_on_a_problem(shared_course, tmp_path):
    result = run_tito(shared_course, "system", "doctor", cwd=tmp_path)  # no workspace here
    assert result.returncode == 1
    assert "problem" in doctor_rows(result.stdout)["workspace"]
    assert "1 problem(s): workspace" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(port: int, token: str) -> int:
    "HTTP status of /api/status with `token` (0 if nothing answers yet)."
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            assert "started" in json.load(response)
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def test_lab_serves_the_modules_with_the_token(shared_course, tmp_path):
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("jupyterlab is not installed")
    port, token = _free_port(), "tito-test-token"
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    env = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    log = tmp_path / "lab.log"  # JupyterLab's own log; a file, so a full pipe never blocks it
    lab = subprocess.Popen([sys.executable, "-m", "tito", "lab", "--port", str(port), "--token", token],
                           cwd=shared_course, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
                           start_new_session=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(lab.stdout), daemon=True).start()
    try:
        deadline = time.monotonic() + 30
        while not any(url in line for line in lines) and lab.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if lab.poll() is not None:
            stderr = log.read_text()
            if "JupyterLab exited with code" in stderr:  # tito ran it; JupyterLab itself could not start here
                pytest.skip(f"JupyterLab cannot start here: {stderr.strip().splitlines()[-2:]}")
            pytest.fail(f"tito lab exited with {lab.returncode} before printing its URL:\n{''.join(lines)}{stderr}")
        assert any(url in line for line in lines), f"no URL within 30 s: {lines}"
        shown = [line for line in lines if line.strip()] + log.read_text().strip().splitlines()
        assert len(shown) <= 3, f"tito lab prints the URL and little else (JupyterLab's log goes to a file):\n{shown}"
        assert _status(port, token) == 200
        assert _status(port, "wrong-token") == 403, "the token must be required"
    finally:
        lab.send_signal(signal.SIGTERM)  # tito stops JupyterLab on SIGTERM
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
    time.sleep(0.5)
    assert _status(port, token) == 0, "JupyterLab must stop with tito"


def test_a_broken_plug_in_does_not_break_tito(course):
    (course / "tito" / "milestone.py").write_text("import a_module_that_is_not_installed\n")
    assert run_tito(course, "module", "list").returncode == 0
    assert_one_line_error(run_tito(course, "milestone", "train", "--steps", "3"),
                          "`tito milestone` is unavailable", "a_module_that_is_not_installed")


def test_a_missing_plug_in_is_simply_absent(monkeypatch):
    from typer.testing import CliRunner

    from tito import cli

    monkeypatch.setattr(cli.Commands, "names", (*cli.COMMANDS, "ghost"))  # no tito/commands/ghost.py
    result = CliRunner().invoke(cli.app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "module" in result.output and "ghost" not in result.output
