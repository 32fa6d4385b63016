"""Fixtures for the nbgrader tests: a temporary copy of the course with its release generated.

Everything runs the real nbgrader (in this process, through tito.grading) on copies; the repository itself is
never written to. The copy is shared at session scope because making a gradebook costs several seconds.
"""
import pytest

from grading_helpers import copy_course
from tito.workspace import Workspace
from tito.grading.generate import generate


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Workspace:
    """A copy of the course whose module 01 release has been generated with nbgrader; the tests of another module
    generate its release when they need it (grading_helpers.require_release), so one module's failure to generate
    fails its own tests only."""
    ws = copy_course(tmp_path_factory.mktemp("course"))
    generate(ws, [ws.module("01")])
    return ws
