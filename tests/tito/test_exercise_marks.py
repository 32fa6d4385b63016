"""Every test of a module suite declares the exercise it exercises, `@pytest.mark.exercise("grade_id")`, and that
grade_id (and every one its `after=` names) is an exercise of the module's notebook: tito shows each failing test
under it (tito/module_checks.py)."""
from pathlib import Path

import pytest

from tito.notebooks import grade_id, is_exercise, parse_notebook
from tito.pytest_plugin import SkippedFile, after_of, exercise_of

REPO = Path(__file__).resolve().parents[2]
SUITES = sorted(p.name for p in (REPO / "tests").glob("0[0-9]_*") if p.is_dir())


class Collected:
    "A pytest plugin that keeps the collected items."

    def __init__(self):
        self.items = []

    def pytest_collection_modifyitems(self, items):
        self.items.extend(items)


def exercises(suite: str) -> set:
    nb = parse_notebook(REPO / "modules" / suite / f"{suite}.ipynb")
    return {grade_id(c) for c in nb.cells if is_exercise(c)}


@pytest.mark.parametrize("suite", SUITES)
def test_every_test_declares_an_exercise_of_its_module(suite):
    collected = Collected()
    code = pytest.main([str(REPO / "tests" / suite), "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "tito.pytest_plugin", "-p", "no:xdist"], plugins=[collected])
    assert code == 0, f"pytest could not collect tests/{suite} (exit code {code})"
    known = exercises(suite)
    tests = [item for item in collected.items if not isinstance(item, SkippedFile)]  # a file skipped whole (no torch)
    wrong = [f"{item.nodeid} ({exercise_of(item) or 'none'}, after {after_of(item)})" for item in tests
             if exercise_of(item) not in known or not set(after_of(item)) <= known]
    assert tests and not wrong, (f"{len(wrong)} tests of tests/{suite} declare no exercise of "
                                           f"{suite}.ipynb ({', '.join(sorted(known))}): " + "; ".join(wrong[:10]))
