"""A pytest plugin tito loads (`pytest -p tito.pytest_plugin`) when it runs a module's test suite.

A test that fails in its own `assert` has no frame of the student's code in its traceback, so nothing there says
which exercise computed the wrong value. While each test runs, this plugin notes which functions of the package
(`$TITO_PACKAGE_DIR`) it calls, and adds them to the test's JUnit record: property `tito-calls`, a JSON list of
[file, first line] in the order of their first call. tito compares the failing tests' calls with the passing
ones' to find the exercise a failure comes from. The test's node id is added as `tito-nodeid`.
Functions that run in other threads are not seen.
"""
import json
import os
import sys

import pytest


def _package_prefixes() -> tuple[str, ...]:
    folder = os.environ.get("TITO_PACKAGE_DIR")
    if not folder:
        return ()
    return tuple({os.path.join(folder, ""), os.path.join(os.path.realpath(folder), "")})


PREFIXES = _package_prefixes()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not PREFIXES:
        yield
        return
    called, in_package = {}, {}  # code object -> None, in the order of first calls; code object -> bool

    def trace(frame, event, arg):
        code = frame.f_code
        inside = in_package.get(code)
        if inside is None:
            inside = in_package[code] = code.co_filename.startswith(PREFIXES)
        if inside and code not in called:
            called[code] = None
        # returns None: no line events for this frame, only the next call

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        yield
    finally:
        sys.settrace(previous)
    item.user_properties.append(("tito-calls", json.dumps([[c.co_filename, c.co_firstlineno] for c in called])))
    item.user_properties.append(("tito-nodeid", item.nodeid))
