"""`tito lab`: JupyterLab on the modules folder, headless, as any user (root included)."""
from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from tito.workspace import TitoError, Workspace, tool_env

HOST = "127.0.0.1"
START_TIMEOUT = 60  # seconds for JupyterLab to answer on /api/status


def new_token() -> str:
    return secrets.token_hex(24)


def lab_command(ws: Workspace, port: int, token: str) -> list[str]:
    "The JupyterLab command line; port_retries=0 so it never silently moves to another port than the one printed."
    return [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--ip={HOST}", f"--port={port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={ws.modules_dir}"]


def lab_url(port: int, token: str) -> str:
    return f"http://{HOST}:{port}/lab?token={token}"


def start(ws: Workspace, port: int, token: str) -> subprocess.Popen:
    """Start JupyterLab and wait until it answers; a TitoError if it exits or does not answer in time. Its own log
    (dozens of lines per start, config warnings included) goes to a file, not the terminal: tito prints the URL, and
    quotes the log's last lines only when the server fails to start."""
    signal.signal(signal.SIGTERM, _exit)
    log = tempfile.TemporaryFile("w+", prefix="tito-lab-")
    server = subprocess.Popen(lab_command(ws, port, token), cwd=ws.modules_dir, env=tool_env(ws.root),
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    server.log = log
    try:
        _wait_until_ready(server, port, token)
    except BaseException:
        stop(server)
        raise
    return server


def log_tail(server: subprocess.Popen, lines: int = 5) -> str:
    "The last lines JupyterLab logged (warnings aside when there is more), for an error message."
    log = getattr(server, "log", None)
    if log is None:
        return ""
    log.seek(0)
    kept = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    errors = [line for line in kept if "WARNING" not in line and "[W " not in line] or kept
    return "\n".join(errors[-lines:])


def _exit(signum, frame):
    "SIGTERM becomes SystemExit, so the `finally` blocks stop the server too."
    sys.exit(128 + signum)


def _wait_until_ready(server: subprocess.Popen, port: int, token: str):
    deadline = time.monotonic() + START_TIMEOUT
    while not answers(port, token):
        if server.poll() is not None:
            tail = log_tail(server)
            raise TitoError(f"JupyterLab exited with code {server.returncode} before it answered on port {port}"
                            + (f"; its last messages:\n{tail}" if tail else ""))
        if time.monotonic() > deadline:
            raise TitoError(f"JupyterLab did not answer on port {port} within {START_TIMEOUT} s")
        time.sleep(0.5)


def answers(port: int, token: str) -> bool:
    "Whether a Jupyter server on `port` accepts `token` at /api/status."
    request = urllib.request.Request(f"http://{HOST}:{port}/api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200 and "started" in json.load(response)
    except (OSError, ValueError):  # not listening yet, or not a Jupyter answer
        return False


def serve(server: subprocess.Popen) -> int:
    "Wait for the server to exit; Ctrl-C or SIGTERM stops it first. Its exit code."
    try:
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(server)


def stop(server: subprocess.Popen):
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
