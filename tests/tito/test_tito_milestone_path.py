"""Which path `tito milestone run gpt` takes: the fast kernels when module 08 is complete (its switch exported into
tinytorch.perf and, in a student workspace, `tito module complete 08` passed), else the plain ops; --fast / --plain decide
instead. tinytorch.perf is faked here, so these tests hold whether or not module 08 exists yet."""
import json
import sys
import types
from importlib.machinery import ModuleSpec

import pytest

from tito import milestone
from tito.workspace import TitoError


def fake_spec(monkeypatch, origin=None):
    "tinytorch.perf found at `origin` (a path), or not found at all (None)."
    spec = None if origin is None else ModuleSpec("tinytorch.perf", None, origin=str(origin))
    monkeypatch.setattr(milestone, "find_spec", lambda name: spec if name == "tinytorch.perf" else None)


def make_workspace(root, student: bool, passed: dict = None):
    "A workspace folder (settings.ini, modules/, tinytorch/perf/), a student's if `student`, with progress."
    (root / "modules").mkdir(parents=True)
    (root / "tinytorch" / "perf").mkdir(parents=True)
    (root / "tinytorch" / "perf" / "__init__.py").write_text("")
    (root / "tinytorch" / "perf" / milestone.SWITCH_BESIDE).write_text("")
    kind = "\n[workspace]\nkind = student\n" if student else ""
    (root / "settings.ini").write_text(f"[course]\ncourse_id = tinytorch\n{kind}")
    if passed is not None:
        (root / ".tito").mkdir()
        modules = {number: {"passed": ok} for number, ok in passed.items()}
        (root / ".tito" / "progress.json").write_text(json.dumps({"modules": modules}))
    return root / "tinytorch" / "perf" / "__init__.py"


def test_without_module_08_the_plain_path(monkeypatch):
    fake_spec(monkeypatch, None)
    path = milestone.choose_path()
    assert not path.fast and str(path).startswith("plain path:") and "module 08 is not exported" in str(path)
    with pytest.raises(TitoError, match="--fast needs module 08"):
        milestone.choose_path(force=True)
    assert not milestone.choose_path(force=False).fast


def test_with_module_07_alone_the_plain_path(monkeypatch, tmp_path):
    "Module 07 exports parts of tinytorch.perf under an empty __init__.py: no switch yet, so the plain path."
    perf = make_workspace(tmp_path / "ws", student=True, passed={"07": True})
    (perf.parent / milestone.SWITCH_BESIDE).unlink()
    fake_spec(monkeypatch, perf)
    path = milestone.choose_path()
    assert not path.fast and "module 08 is not exported" in str(path)
    with pytest.raises(TitoError, match="--fast needs module 08"):
        milestone.choose_path(force=True)


def test_with_module_08_outside_any_workspace_the_fast_path(monkeypatch, tmp_path):
    perf = tmp_path / "site-packages" / "tinytorch" / "perf" / "__init__.py"
    perf.parent.mkdir(parents=True)
    perf.write_text("")
    (perf.parent / milestone.SWITCH_BESIDE).write_text("")
    fake_spec(monkeypatch, perf)
    path = milestone.choose_path()
    assert path.fast and str(path).startswith("fast path:") and "tinytorch.perf.enable()" in str(path)
    assert milestone.choose_path(force=True).fast
    plain = milestone.choose_path(force=False)
    assert not plain.fast and "--plain" in str(plain)


def test_in_the_course_repository_module_08_exported_is_enough(monkeypatch, tmp_path):
    fake_spec(monkeypatch, make_workspace(tmp_path / "course", student=False))
    assert milestone.choose_path().fast


def test_in_a_student_workspace_module_08_must_be_complete(monkeypatch, tmp_path):
    root = tmp_path / "ws"
    fake_spec(monkeypatch, make_workspace(root, student=True, passed={"07": True, "08": False}))
    path = milestone.choose_path()
    assert not path.fast and "module 08 is not complete" in str(path)
    forced = milestone.choose_path(force=True)
    assert forced.fast and "--fast" in str(forced) and "not complete" in str(forced)

    (root / ".tito" / "progress.json").write_text(json.dumps({"modules": {"08": {"passed": True}}}))
    assert milestone.choose_path().fast


def test_a_student_workspace_with_no_progress_yet_is_not_complete(monkeypatch, tmp_path):
    fake_spec(monkeypatch, make_workspace(tmp_path / "ws", student=True))
    assert not milestone.choose_path().fast


def test_only_the_workspace_that_holds_the_package_counts(monkeypatch, tmp_path):
    "A package installed elsewhere inside a student workspace's folder (a venv's site-packages) is not its export."
    root = tmp_path / "ws"
    make_workspace(root, student=True, passed={"08": False})
    installed = root / ".venv" / "lib" / "site-packages" / "tinytorch" / "perf" / "__init__.py"
    installed.parent.mkdir(parents=True)
    installed.write_text("")
    (installed.parent / milestone.SWITCH_BESIDE).write_text("")
    fake_spec(monkeypatch, installed)
    assert milestone.choose_path().fast


class FakePerf(types.ModuleType):
    "tinytorch.perf's interface: enable(), disable(), is_enabled(), warm_up(); it records the calls."

    def __init__(self, enabled=False):
        super().__init__("tinytorch.perf")
        self.enabled, self.calls = enabled, []

    def enable(self):
        self.calls.append("enable")
        self.enabled = True

    def disable(self):
        self.calls.append("disable")
        self.enabled = False

    def is_enabled(self):
        return self.enabled

    def warm_up(self):
        self.calls.append("warm_up")
        return {}


@pytest.fixture
def fake_perf(monkeypatch):
    import tinytorch

    perf = FakePerf()
    monkeypatch.setitem(sys.modules, "tinytorch.perf", perf)
    monkeypatch.setattr(tinytorch, "perf", perf, raising=False)
    return perf


def test_the_fast_path_switches_the_kernels_on_for_the_run_only(fake_perf):
    with milestone.kernel_path(True):
        assert fake_perf.is_enabled()
    assert not fake_perf.is_enabled() and fake_perf.calls == ["enable", "warm_up", "disable"]


def test_the_plain_path_switches_them_off_and_back(fake_perf):
    fake_perf.enabled = True
    with milestone.kernel_path(False):
        assert not fake_perf.is_enabled()
    assert fake_perf.is_enabled() and fake_perf.calls == ["disable", "enable"]


def test_kernels_already_as_wanted_are_left_alone(fake_perf):
    with milestone.kernel_path(False):
        pass
    fake_perf.enabled = True
    with milestone.kernel_path(True):
        pass
    assert fake_perf.calls == ["warm_up"] and fake_perf.is_enabled()   # ready, but not switched


def test_an_error_in_the_run_still_restores_the_kernels(fake_perf):
    with pytest.raises(RuntimeError):
        with milestone.kernel_path(True):
            raise RuntimeError("the run failed")
    assert not fake_perf.is_enabled()


def test_the_plain_path_does_not_import_module_08(monkeypatch):
    monkeypatch.delitem(sys.modules, "tinytorch.perf", raising=False)
    with milestone.kernel_path(False):
        assert "tinytorch.perf" not in sys.modules


def test_a_module_08_that_does_not_import_is_one_line(monkeypatch):
    import tinytorch

    monkeypatch.setitem(sys.modules, "tinytorch.perf", None)  # `import tinytorch.perf` raises ImportError
    monkeypatch.delattr(tinytorch, "perf", raising=False)
    with pytest.raises(TitoError, match="tinytorch.perf .module 08. does not import: .*--plain") as caught:
        with milestone.kernel_path(True):
            pass
    assert "\n" not in str(caught.value)
