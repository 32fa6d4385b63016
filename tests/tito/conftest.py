"""Fixtures for the tito tests: throwaway copies of the course repository to run tito in.

The copy is the committed tree (`git archive HEAD`) with the working tree's `tito/` on top, so these tests
exercise the tito being developed against notebooks and a package that match each other. Module 01's test
suite in the copy is replaced by a small probe suite with known test names, so the tests do not depend on
the real suite's contents or speed.
"""
import shutil
from pathlib import Path

import pytest

from tito_helpers import PROBE_SUITE, REPO, committed_tree


@pytest.fixture(scope="session")
def pristine(tmp_path_factory) -> Path:
    "A course repository to copy from (never run tito in it directly)."
    root = tmp_path_factory.mktemp("pristine") / "course"
    root.mkdir()
    committed_tree(root)
    shutil.rmtree(root / "tito", ignore_errors=True)
    shutil.copytree(REPO / "tito", root / "tito", ignore=shutil.ignore_patterns("__pycache__"))
    suite = root / "tests" / "01_tensor"
    shutil.rmtree(suite, ignore_errors=True)
    suite.mkdir(parents=True)
    (suite / "test_probe_tensor.py").write_text(PROBE_SUITE)
    return root


@pytest.fixture(scope="session")
def shared_course(pristine, tmp_path_factory) -> Path:
    "One copy shared by the tests that only read (list, status, doctor, lab)."
    root = tmp_path_factory.mktemp("shared") / "course"
    shutil.copytree(pristine, root)
    return root


@pytest.fixture
def course(pristine, tmp_path) -> Path:
    "A fresh copy for a test that changes notebooks, the package or the progress file."
    root = tmp_path / "course"
    shutil.copytree(pristine, root)
    return root
