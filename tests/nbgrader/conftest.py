"""Fixtures for the nbgrader tests: a temporary copy of the course with its release generated.

Everything runs the real nbgrader (in this process, through tito.grading) on copies; the repository itself is
never written to. The copy is shared at session scope because making a gradebook costs several seconds.
"""
import pytest

from grading_helpers import copy_course
from tito.course import Workspace
from tito.grading import generate


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Workspace:
    "A copy of the course whose release (every module) has been generated with nbgrader."
    ws = copy_course(tmp_path_factory.mktemp("course"))
    generate(ws, ws.modules())
    return ws
