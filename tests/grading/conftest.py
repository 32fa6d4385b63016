"""Fixtures for the attack tests: module 01's release in a temporary copy of the course."""
import pytest

from attack_helpers import copy_course  # noqa: F401  (also puts tests/nbgrader on the path)
from tito.grading.generate import generate


@pytest.fixture(scope="session")
def course01(tmp_path_factory):
    "A copy of the course with module 01's release generated (nbgrader)."
    ws = copy_course(tmp_path_factory.mktemp("attacks") / "course")
    generate(ws, [ws.module("01")])
    return ws
