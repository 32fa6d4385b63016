"""A pytest plugin tito loads (`pytest -p tito.pytest_plugin`) when it runs a module's test suite.

Every test of a module suite declares the exercise it exercises, `@pytest.mark.exercise("grade_id")` (on the test,
its class, its parameter or the file's `pytestmark`), and, when it also runs the code of exercises that exercise's
graded check does not build on, those: `@pytest.mark.exercise("masks", after=("attention-backward",))`. This plugin
adds them to the test's JUnit record, properties `tito-exercise` and `tito-after`, with the test's node id,
`tito-nodeid`; tito shows a failure under that exercise, and "fix Exercise N first" when one it builds on fails.

`--tito-stop-early=a,b,c` runs the tests in that order of exercises (a stable sort: within an exercise, as
collected) and stops after the first exercise with a failing test.

A test file skipped whole (`pytest.importorskip("torch", reason=...)` at its top) becomes one skipped test with that
reason: JUnit would record only "collection skipped", and tito could not say what is missing or how to install it.
"""
import pytest


def exercise_of(item) -> str:
    "The grade_id a test declares, or ''."
    mark = item.get_closest_marker("exercise")
    return mark.args[0] if mark and mark.args else ""


def after_of(item) -> tuple:
    "The grade_ids a test declares it builds on besides its exercise's own (`after=`), or ()."
    mark = item.get_closest_marker("exercise")
    after = mark.kwargs.get("after", ()) if mark else ()
    return (after,) if isinstance(after, str) else tuple(after)


def pytest_addoption(parser):
    parser.addoption("--tito-stop-early", default="", metavar="GRADE_IDS",
                     help="run the tests in this order of exercises (comma-separated grade_ids) and stop after "
                          "the first exercise with a failing test")


def pytest_collection_modifyitems(config, items):
    order = [g for g in config.getoption("tito_stop_early").split(",") if g]
    if order:
        rank = {gid: i for i, gid in enumerate(order)}
        items.sort(key=lambda item: rank.get(exercise_of(item), len(rank)))


class SkippedFile(pytest.Item):
    "Stands for a test file that was skipped whole; it skips with the file's reason."

    def __init__(self, *, reason: str, **kwargs):
        super().__init__(**kwargs)
        self.reason = reason

    def runtest(self):
        pytest.skip(self.reason)

    def reportinfo(self):
        return self.path, None, self.name


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    report = (yield).get_result()
    if isinstance(collector, pytest.Module) and report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        report.outcome, report.longrepr = "passed", None
        report.result = [SkippedFile.from_parent(collector, name=collector.path.name, reason=reason)]


FAILED = pytest.StashKey[str]()  # the exercise of the first failing test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.user_properties += [("tito-exercise", exercise_of(item)), ("tito-after", ",".join(after_of(item))),
                             ("tito-nodeid", item.nodeid)]
    yield
    failed = item.session.stash.get(FAILED, None)
    if failed is not None and item.config.getoption("tito_stop_early") and \
            (nextitem is None or exercise_of(nextitem) != failed):
        item.session.shouldstop = f"stopped after the first exercise with a failing test ({failed or 'none'})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed and FAILED not in item.session.stash:
        item.session.stash[FAILED] = exercise_of(item)
