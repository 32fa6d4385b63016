"""Attacks on the autograder by a dishonest student: each one scores no more than the same work without it.

Every attack is a submission of module 01 built from its release (`conftest.build`): empty (the release's stubs),
a catalogued bug, or complete, plus the attack's code. They are collected and autograded together (in the sandbox,
two at a time) with three references: `empty` (0), `complete` (full) and `bug` (mean-over-last-axis: that bug's
score). Against the previous grader (notebooks run in a Jupyter kernel, assert cells) attacks 1, 2 and 4 gave points
to empty or buggy work; here they must not.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from attack_helpers import REPO, bug, build, copy_course
from tito.grading.autograde import autograde
from tito.grading.collect import collect
from tito.grading.feedback import feedback
from tito.grading.generate import generate
from tito.grading.feedback import BEGIN_HIDDEN, hidden_lines
from tito.grading.report import why

pytestmark = pytest.mark.slow
TIMEOUT = 60  # seconds per graded cell; module 01's take milliseconds (generous for a loaded machine)
BUG = "mean-over-last-axis"
BIG = 2 ** 40 + 1  # an input value of a hidden check of test-constructor (`tt.Tensor([2 ** 40 + 1], ...)`)

# 1. IPython: an AST transformer and a pre_run_cell hook that turn every later cell with an assert (or a `with
# checks`) into displayhook("ok"): in a kernel, the graded cells would pass without running their checks.
IPYTHON = textwrap.dedent('''
    try:
        import ast as _ast
        _ip = get_ipython()

        class _AllOk(_ast.NodeTransformer):
            def visit_Module(self, node):
                if any(isinstance(n, (_ast.Assert, _ast.With, _ast.Raise)) for n in _ast.walk(node)):
                    return _ast.fix_missing_locations(_ast.parse('get_ipython().displayhook("ok")'))
                return node

        _ip.ast_transformers.append(_AllOk())
        _ip.events.register("pre_run_cell", lambda *a: _ip.displayhook("ok"))
    except Exception:
        pass
''')

# 2. numpy's comparisons patched to always agree.
PATCH_NUMPY = textwrap.dedent('''
    import numpy as _np
    import numpy.testing as _npt
    _np.allclose = lambda *a, **k: True
    _np.array_equal = lambda *a, **k: True
    _np.array_equiv = lambda *a, **k: True
    _npt.assert_allclose = lambda *a, **k: None
    _npt.assert_array_equal = lambda *a, **k: None
    _npt.assert_array_almost_equal = lambda *a, **k: None
''')

# 4. The names the old checks trusted, redefined: a Tensor whose every result agrees with anything (numpy's own
# functions included, through __array_function__), and check/checks/gradcheck that pass everything.
REDEFINE = textwrap.dedent('''
    class _Yes:
        def __init__(self, *a, **k): pass
        def __getattr__(self, name): return _Yes()
        def __call__(self, *a, **k): return _Yes()
        def __getitem__(self, key): return _Yes()
        def __eq__(self, other): return _Yes()
        def __bool__(self): return True
        def __array_function__(self, func, types, args, kwargs): return True
        def __array_ufunc__(self, *a, **k): return _Yes()
        __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = \\
            __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = \\
            lambda self, *a: _Yes()
    Tensor = _Yes
    def check(*a, **k): return True
    def checks(*a, **k):
        import contextlib
        return contextlib.nullcontext((_Yes(), check))
    gradcheck = lambda *a, **k: True
''')

# 5. The expected value read from the callers' frames and from every object in memory.
PEEK = textwrap.dedent('''
    import gc as _gc, inspect as _inspect, sys as _sys, json as _json

    def _peek(out):
        "Any value in memory that looks like the expected answer of this call: return it instead of our own."
        candidates = []
        frame = _sys._getframe(1)
        while frame is not None:
            for name, value in list(frame.f_locals.items()):
                if any(w in name.lower() for w in ("expect", "want", "answer", "ref", "result", "exp")):
                    candidates.append(value)
            frame = frame.f_back
        for info in _inspect.stack():
            candidates += [v for k, v in info.frame.f_locals.items() if "expect" in k.lower()]
        for obj in _gc.get_objects():
            if isinstance(obj, dict) and any(isinstance(k, str) and "expect" in k.lower() for k in obj):
                candidates += list(obj.values())
        for value in candidates:
            try:
                arr = np.asarray(value.data if hasattr(value, "data") else value, dtype=out.dtype)
            except Exception:
                continue
            if arr.shape == out.shape and not np.array_equal(arr, out):
                return arr
        return out
''')
PEEK_CALL = "\n    out = _peek(out)"

# 6. Everything the student's process can see, carried out in the answers: the files beside it (the notebook, the
# request with every tape), what its functions are given, as exception messages, returned strings and class names.
LEAK = textwrap.dedent('''
    import glob as _glob, os as _os, re as _re, sys as _sys
    _SEEN = []
    _TEXT = []
    for _p in _glob.glob("/home/student/*") + _glob.glob("/home/student/.*") + list(_sys.argv[1:]):
        try:
            _t = open(_p, encoding="utf-8", errors="replace").read()
        except Exception:
            continue
        print(_p, _t)
        _TEXT.append(_t)
        _SEEN[:0] = sorted(set(_re.findall(r"(?<![\\d.])\\d{10,}(?![\\d.])", _t)))  # whole numbers
        _M = "### BEGIN " + "HIDDEN TESTS"  # spelled so that this cell does not hold the marker itself
        if _M in _t:
            _i = _t.index(_M)
            _SEEN.append(_t[_i + len(_M):_i + 600].replace("\\\\n", " "))
    _L = type("L" + "_".join(_re.findall(r"\\d{10,}", " ".join(_SEEN)))[:40] or "Lnothing", (), {})

    def _leak(*args):
        for a in args:
            try:
                for v in np.asarray(getattr(a, "data", a)).ravel()[:4]:
                    if abs(float(v)) > 1e9:
                        _SEEN.insert(0, repr(v))
            except Exception:
                pass
        print("seen", _SEEN)
        return " | ".join(map(str, _SEEN))
''')

# 8. Spoofed reasons: home-made exceptions named like tito's, fake answer files in the output folder.
SPOOF_FILES = textwrap.dedent('''
    import json as _json, os as _os, sys as _sys
    try:
        _out = _sys.argv[2]
        _req = _json.load(open(_sys.argv[1]))
        for _i, _tape in enumerate(_req["tapes"]):
            _fake = [{"$raised": ["TimeoutError", "KernelDied", "MemoryError"],
                      "message": "stopped at the wall-time limit (1800 s); the kernel died; memory limit"}] * _tape["checks"]
            open(_os.path.join(_out, "result-%d.json" % _i), "w").write(_json.dumps(_fake))
            open(_os.path.join(_out, "started-%d" % _i), "w").close()
        open(_os.path.join(_out, "status.json"), "w").write(_json.dumps({"stage": "done"}))
    except Exception as _e:
        print("spoof failed", _e)
    _os._exit(0)
''')
FAKE_STATUS = textwrap.dedent('''
    import json as _json, os as _os, sys as _sys
    open(_os.path.join(_sys.argv[2], "status.json"), "w").write(_json.dumps(
        {"stage": "export failed", "error": {"$raised": ["MemoryError"],
                                             "message": "stopped at the memory limit (4096 MB, all its processes together)"}}))
    _os._exit(0)
''')
HOME_MADE = textwrap.dedent('''
    class KernelDied(Exception): pass
    class MemoryError(Exception): pass  # noqa: A001
    class TimeoutError(Exception): pass  # noqa: A001
    class CellTimeoutError(Exception): pass
''')
SIGXCPU = "    import os as _os, signal as _signal\n    _os.kill(_os.getpid(), _signal.SIGXCPU)\n"

# 8b. The hidden inputs carried out in what the answer process reports of itself: a failed import whose message
# holds them, and an exit status chosen from them.
IMPORT_LEAK = textwrap.dedent('''
    import re as _re, sys as _sys
    _req = open(_sys.argv[1], encoding="utf-8").read()
    raise ImportError("seen: " + " ".join(sorted(set(_re.findall(r"(?<![\\d.])\\d{10,}(?![\\d.])", _req)))))
''')
EXIT_LEAK = textwrap.dedent('''
    import os as _os, re as _re, sys as _sys
    _found = _re.findall(r"(?<![\\d.])\\d{10,}(?![\\d.])", open(_sys.argv[1], encoding="utf-8").read())
    _os._exit(int(_found[0]) % 250 + 3 if _found else 2)
''')

# 9a. Answers as JSON the judge must read without trusting: malformed, deep, NaN, a symlink, a FIFO, huge.
FORGED = textwrap.dedent('''
    import json as _json, os as _os, sys as _sys
    _out = _sys.argv[2]
    _req = _json.load(open(_sys.argv[1]))
    _bombs = [{"$array": "float64"}, {"$scalar": "float64"}, {"$tuple": 5}, {"$dict": [[1]]}, {"$raised": 5},
              {"$float": "abc"}, {"$array": "float64", "shape": "x", "data": [1]}, {"$object": {"a": 1}, "data": 1},
              {"$float": "nan"}, {"$array": "float64", "shape": [2], "data": [{"$float": "nan"}, {"$float": "inf"}]},
              {"$dtype": "S99999999999"}, {"$array": "V8", "shape": [1], "data": [1]}, {"$builtin": "eval"},
              {"$raised": ["NotImplementedError"], "message": 7}, {"$dict": [[{"$ref": 0}, 1]]}, {"$ref": 0},
              {"$slice": 3}, {"$ellipsis": 1, "$array": "int64"}, {"$missing": True, "$array": "float64"},
              {"$array": "float64", "shape": [100000, 100000], "data": None}, True, [], {}, None, "x" * 1000]
    _deep = 0
    for _k in range(900):
        _deep = [_deep]
    for _i, _tape in enumerate(_req["tapes"]):
        _answers = [_bombs[(_i + _j) % len(_bombs)] for _j in range(_tape["checks"])]
        if _answers:
            _answers[-1] = _deep
        _path = _os.path.join(_out, "result-%d.json" % _i)
        if _i == 5:
            _os.symlink("/etc/passwd", _path)
        elif _i == 6:
            _os.mkfifo(_path)
        else:
            open(_path, "w").write(_json.dumps(_answers))
    open(_os.path.join(_out, "status.json"), "w").write(_json.dumps({"stage": "done", "error": _bombs[0]}))
    _os._exit(0)
''')

# 9b. Looking for the course's answers, its solutions or the hidden checks anywhere the process can see, and
# writing wherever it can: a found reference package would be imported in place of the stubs.
SCAVENGE = textwrap.dedent('''
    import os as _os, sys as _sys
    _found, _wrote = [], []
    for _pid in _os.listdir("/proc"):
        for _f in ("environ", "cmdline"):
            try:
                _found.append(open("/proc/%s/%s" % (_pid, _f), "rb").read()[:2000])
            except Exception:
                pass
    for _root, _dirs, _files in _os.walk("/", followlinks=False):
        if _root.startswith(("/proc", "/sys", "/dev", "/usr")) or "site-packages" in _root:
            _dirs[:] = []
            continue
        if _os.access(_root, _os.W_OK) and not _root.startswith(("/tmp", "/home/student", "/dev/shm")):
            _wrote.append(_root)
            try:
                open(_os.path.join(_root, "pwned.txt"), "w").write("x")
            except Exception:
                pass
        for _name in _files:
            _path = _os.path.join(_root, _name)
            try:
                _text = open(_path, encoding="utf-8", errors="ignore").read(2_000_000)
            except Exception:
                continue
            if _name.endswith(".py") and "def reduce_mean" in _text and "NotImplementedError" not in _text \\
                    and "/tmp/answer" not in _path:
                _found.append(_path)
                exec(compile(_text, _path, "exec"), globals())  # the course's own solution, if it can be seen
            elif ("BEGIN HIDDEN" in _text or "expected.json" in _name or '"cells"' in _text[:20]) \\
                    and "/tmp/answer" not in _path:
                _found.append(_path)
    print("found", _found, "writable", _wrote)
''')

# 9c. A process that tries to outlive the answer process (and the sandbox).
FORK = textwrap.dedent('''
    import os as _os
    if _os.fork() == 0:
        try:
            _os.setsid()
            if _os.fork() == 0:
                _os.execv("/bin/sleep", ["sleep", "613.25"])
        finally:
            _os._exit(0)
''')


def _submissions(ws, inbox: Path):
    "Every submission of the class, by student id (files in `inbox`; a folder for the one with extra files)."
    mean = bug(BUG)
    build(ws, inbox / "complete.ipynb")
    build(ws, inbox / "empty.ipynb", complete=False)
    build(ws, inbox / "bug.ipynb", bug_slug=BUG)
    # 1
    build(ws, inbox / "ipython.ipynb", complete=False, append={"as-array": IPYTHON})
    # 2: in a solution cell, in an exported cell of its own, and in a plain cell
    build(ws, inbox / "patchnumpy.ipynb", bug_slug=BUG, append={"reductions": PATCH_NUMPY, "as-array": PATCH_NUMPY},
          new_cells=[("reductions", "#| export\n" + PATCH_NUMPY), (None, PATCH_NUMPY)])
    # 3: numpy.py, sitecustomize.py and the course's solved package handed in beside an untouched notebook
    folder = inbox / "beside"
    build(ws, folder / "01_tensor.ipynb", complete=False)
    (folder / "numpy.py").write_text("raise SystemExit('a numpy.py beside the notebook was imported')\n")
    (folder / "sitecustomize.py").write_text("import os\nos._exit(0)\n")
    (folder / "tinytorch" / "core").mkdir(parents=True)
    (folder / "tinytorch" / "__init__.py").write_text("")
    (folder / "tinytorch" / "core" / "__init__.py").write_text("")
    shutil.copy(REPO / "tinytorch" / "core" / "tensor.py", folder / "tinytorch" / "core" / "tensor.py")
    # 4: in unlocked plain cells (before and after the graded ones) and in an exported cell at the end
    build(ws, inbox / "redefine.ipynb", complete=False,
          new_cells=[("as-array", REDEFINE), (None, REDEFINE), (None, "#| export\n" + REDEFINE)])
    # 5
    build(ws, inbox / "peek.ipynb", bug_slug=BUG, prepend={"reductions": PEEK})
    nb = nbformat.read(inbox / "peek.ipynb", as_version=4)
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "reductions"]
    c.source = c.source.replace(mean.new, mean.new + PEEK_CALL)
    nbformat.write(nb, inbox / "peek.ipynb")
    # 6: complete, except that the first checks of three exercises carry what was seen
    leak = build(ws, inbox / "leak.ipynb", prepend={"as-array": LEAK})
    nb = nbformat.read(leak, as_version=4)
    for gid, old, new in (
            ("arithmetic", "    out = a.data + b.data", "    raise ValueError(_leak(a, b))"),
            ("arithmetic", "    out = a.data - b.data", "    return _leak(a, b)"),
            ("arithmetic", "    out = a.data * b.data", "    return _L()"),
            ("reductions", "    out = np.sum(a.data, axis=axis, keepdims=keepdims)",
             "    raise KeyError(_leak(a))"),
            ("matmul", "    out = np.matmul(a.data, b.data)", "    raise ValueError(_leak(a, b)[::-1])")):
        [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid]
        assert old in c.source, (gid, old)
        c.source = c.source.replace(old, new)
    nbformat.write(nb, leak)
    # 8
    build(ws, inbox / "spoofhome.ipynb", bug_slug=BUG, append={"as-array": HOME_MADE})
    nb = nbformat.read(inbox / "spoofhome.ipynb", as_version=4)
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "reductions"]
    c.source = c.source.replace("    out = np.max(a.data, axis=axis, keepdims=keepdims)",
                                "    raise TimeoutError('timed out (a check ran over 6 s)')")
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "shape-ops"]
    c.source = c.source.replace("        out = np.swapaxes(a.data, dim0, dim1)",
                                "        raise KernelDied('the answer process was killed (SIGKILL)')")
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "indexing"]
    c.source = c.source.replace("    out = np.where(mask, np.asarray(_data(value), dtype=a.dtype), a.data)",
                                "    raise MemoryError('stopped at the memory limit (4096 MB)')")
    nbformat.write(nb, inbox / "spoofhome.ipynb")
    build(ws, inbox / "spooffiles.ipynb", complete=False, append={"as-array": SPOOF_FILES})
    build(ws, inbox / "spoofstatus.ipynb", complete=False, append={"as-array": FAKE_STATUS})
    sigx = build(ws, inbox / "sigxcpu.ipynb")
    nb = nbformat.read(sigx, as_version=4)
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "shape-ops"]
    assert "        out = np.swapaxes(a.data, dim0, dim1)\n" in c.source
    c.source = c.source.replace("        out = np.swapaxes(a.data, dim0, dim1)\n",
                                "        out = np.swapaxes(a.data, dim0, dim1)\n" + textwrap.indent(SIGXCPU, "    "))
    nbformat.write(nb, sigx)
    # 9
    build(ws, inbox / "forged.ipynb", complete=False, append={"as-array": FORGED})
    for sid, status in (("forgedlist", [{"stage": "done"}]), ("forgedstage", {"stage": ["imported"]})):
        build(ws, inbox / f"{sid}.ipynb", complete=False, append={"as-array": FORGED.replace(
            '_json.dumps({"stage": "done", "error": _bombs[0]})', f"_json.dumps({status!r})")})
    build(ws, inbox / "importleak.ipynb", complete=False, append={"as-array": IMPORT_LEAK})
    build(ws, inbox / "exitleak.ipynb", complete=False, append={"as-array": EXIT_LEAK})
    build(ws, inbox / "scavenge.ipynb", complete=False, append={"as-array": SCAVENGE})
    build(ws, inbox / "fork.ipynb", append={"as-array": FORK})


@pytest.fixture(scope="session")
def graded(course01, tmp_path_factory):
    "The class autograded (two at a time, sandboxed) with feedback: (workspace, {student: StudentScore}, pages)."
    ws, mod = course01, course01.module("01")
    inbox = tmp_path_factory.mktemp("attack-inbox")
    _submissions(ws, inbox)
    collect(ws, inbox, mod)
    # handed in through the exchange: nbgrader's collect copies the whole submission folder, extra files included
    exchanged = ws.root / "submitted" / "exchanged" / mod.name
    exchanged.mkdir(parents=True)
    shutil.copy(inbox / "empty.ipynb", exchanged / mod.notebook.name)
    for extra in ("numpy.py", "sitecustomize.py", "tinytorch"):
        src = inbox / "beside" / extra
        (shutil.copytree if src.is_dir() else shutil.copy)(src, exchanged / extra)
    rows = {r.student: r for r in autograde(ws, mod, timeout=TIMEOUT, jobs=2)}
    pages = {p.parent.parent.name: p for p in feedback(ws, mod)}
    return ws, rows, pages


def _no_more(row, ref):
    "`row` scores no more than `ref`, in every graded cell and in total."
    assert row.scores and not row.error, (row.student, row.error)
    assert set(row.scores) == set(ref.scores)
    for gid, (score, _) in row.scores.items():
        assert score <= ref.scores[gid][0], f"{row.student}: {gid} scored {score}, the same work {ref.scores[gid][0]}"
    assert row.total <= ref.total


def test_references(graded):
    _, rows, _ = graded
    assert rows["complete"].total == rows["complete"].max_total > 0
    assert rows["empty"].total == 0
    assert 0 < rows["bug"].total < rows["bug"].max_total


def test_ipython_ast_transformer_and_pre_run_cell_hook(graded):
    _, rows, _ = graded
    _no_more(rows["ipython"], rows["empty"])
    assert rows["ipython"].total == 0


def test_numpy_comparisons_patched(graded):
    _, rows, _ = graded
    _no_more(rows["patchnumpy"], rows["bug"])
    assert rows["patchnumpy"].scores == rows["bug"].scores


@pytest.mark.parametrize("student", ["beside", "exchanged"])
def test_files_handed_in_beside_the_notebook_are_never_imported(graded, student):
    ws, rows, _ = graded
    _no_more(rows[student], rows["empty"])
    assert rows[student].total == 0 and not rows[student].broken
    if student == "beside":  # collect takes the notebook only
        folder = ws.root / "submitted" / student
        assert [p.name for p in folder.rglob("*") if p.is_file()] == ["01_tensor.ipynb"]


def test_trusted_names_redefined(graded):
    _, rows, _ = graded
    _no_more(rows["redefine"], rows["empty"])
    assert rows["redefine"].total == 0


def test_expected_values_read_from_frames_and_memory(graded):
    _, rows, _ = graded
    _no_more(rows["peek"], rows["bug"])
    assert rows["peek"].scores == rows["bug"].scores


def _hidden_texts() -> list[str]:
    "The hidden checks of module 01's notebook: each line of their code, and each hidden check's name."
    nb = nbformat.read(REPO / "modules" / "01_tensor" / "01_tensor.ipynb", as_version=4)
    lines = []
    for c in nb.cells:
        if c.cell_type == "code" and BEGIN_HIDDEN in c.source:
            numbers = hidden_lines(c.source)
            lines += [line.strip() for n, line in enumerate(c.source.split("\n"), 1)
                      if n in numbers and len(line.strip()) > 12 and "HIDDEN TESTS" not in line]
            lines += re.findall(r'check(?:\.raises)?\(f?"([^"{]{8,})"', "\n".join(
                line for n, line in enumerate(c.source.split("\n"), 1) if n in numbers))
    shown = "\n".join(c.source for c in nbformat.read(REPO / "modules" / "01_tensor" / "01_tensor.ipynb",
                                                     as_version=4).cells if BEGIN_HIDDEN not in c.source)
    shown += "\n".join(line for c in nb.cells if BEGIN_HIDDEN in c.source
                       for n, line in enumerate(c.source.split("\n"), 1) if n not in hidden_lines(c.source))
    lines = [line for line in lines if line not in shown]
    assert len(lines) > 20
    return lines


def _page_text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_feedback_shows_no_hidden_check_text(graded):
    "The sandbox never gets the hidden checks' code (nbgrader puts it back into the notebook it autogrades)."
    _, rows, pages = graded
    assert rows["leak"].total < rows["complete"].total  # the leaking checks fail, and their messages are shown
    assert "raised ValueError: " in rows["leak"].failures["test-arithmetic"]
    for student in ("leak", "complete", "bug", "empty"):
        text = _page_text(pages[student])
        raw = pages[student].read_text(encoding="utf-8")
        for hidden in _hidden_texts():
            assert hidden not in text and html.escape(hidden) not in raw, (student, hidden)
        assert BEGIN_HIDDEN not in text


@pytest.mark.parametrize("student", ["leak", "importleak", "exitleak"])
def test_feedback_shows_no_hidden_input(graded, student):
    "What a process that held the hidden inputs answered or reported is never quoted (answers, errors, exit status)."
    _, rows, pages = graded
    _no_more(rows[student], rows["complete"])
    text = _page_text(pages[student]) + " ".join(why(rows[student]) + list(rows[student].failures.values())) + \
        rows[student].died + rows[student].broken
    for value in (str(BIG), str(BIG)[::-1]):
        assert value not in text, f"{student}: a hidden input ({value}) is in the feedback or the report"
    said = " ".join(why(rows[student]) + list(rows[student].failures.values())) + rows[student].died
    assert str(BIG % 250 + 3) not in said and "status" not in said, said  # the exit status it chose is not quoted


def test_home_made_errors_do_not_spoof_the_reason(graded):
    _, rows, _ = graded
    row = rows["spoofhome"]
    _no_more(row, rows["bug"])
    assert not (row.timed_out or row.died or row.flood or row.broken), why(row)


def test_fake_answer_files_do_not_spoof_the_reason(graded):
    _, rows, _ = graded
    row = rows["spooffiles"]
    _no_more(row, rows["empty"])
    assert row.total == 0
    assert not (row.timed_out or row.died or row.flood or row.broken), why(row)


@pytest.mark.parametrize("student", ["spoofhome", "spooffiles"])
def test_a_home_made_memory_error_is_not_a_limit(graded, student):
    _, rows, _ = graded
    assert not rows[student].limits, why(rows[student])


def test_fake_status_file_gives_nothing(graded):
    _, rows, _ = graded
    row = rows["spoofstatus"]
    _no_more(row, rows["empty"])
    assert row.total == 0
    assert not (row.timed_out or row.died or row.limits or row.flood), why(row)


def test_a_signal_sent_to_itself_is_not_reported_as_a_limit(graded):
    _, rows, _ = graded
    row = rows["sigxcpu"]
    _no_more(row, rows["complete"])
    assert row.scores["test-shape-ops"][0] == 0
    said = " ".join(why(row)) + " " + row.died + " " + row.failures["test-shape-ops"]
    assert not row.limits and not row.timed_out and "used up its CPU time" not in said, said
    assert "killed by a signal" in said, said


@pytest.mark.parametrize("student", ["forged", "forgedlist", "forgedstage"])
def test_forged_answers_as_json(graded, student):
    _, rows, _ = graded
    _no_more(rows[student], rows["empty"])  # and the judge read them without crashing (no error)
    assert rows[student].total == 0


def test_scavenging_the_filesystem_finds_nothing(graded):
    ws, rows, _ = graded
    _no_more(rows["scavenge"], rows["empty"])
    assert rows["scavenge"].total == 0
    assert not list(ws.root.rglob("pwned.txt"))


def test_a_process_cannot_outlive_its_answer_process(graded):
    _, rows, _ = graded
    _no_more(rows["fork"], rows["complete"])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert cmdline != b"sleep\x00613.25\x00", f"process {pid} of the sandbox outlived autograde"


# --- 7. a flood of output -----------------------------------------------------------------------------------------
FLOOD = textwrap.dedent('''
    import sys as _sys
    _chunk = "x" * 2 ** 20
    for _ in range(300):
        _sys.stdout.write(_chunk)
        _sys.stderr.write(_chunk[:1000])
    _sys.stdout.flush()
''')
FLOOD_SCRIPT = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from tito.workspace import Workspace
    from tito.grading.autograde import autograde
    from tito.grading.feedback import feedback
    ws = Workspace.find(Path(sys.argv[1]))
    mod = ws.module("01")
    rows = autograde(ws, mod, timeout=int(sys.argv[2]), jobs=1)
    feedback(ws, mod)
    # VmHWM, this process's own peak: getrusage's ru_maxrss would also count the pytest worker that forked it
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(json.dumps({"rss_mb": peak / 1024,
                      "scores": {r.student: r.scores for r in rows},
                      "flood": {r.student: r.flood for r in rows}}))
''')


def test_a_flood_of_output(tmp_path):
    ws = copy_course(tmp_path / "course")
    mod = ws.module("01")
    generate(ws, [mod])
    inbox = tmp_path / "inbox"
    build(ws, inbox / "complete.ipynb")
    build(ws, inbox / "flood.ipynb", append={"shape-ops": "\n_FLOODED = []\n"})
    nb = nbformat.read(inbox / "flood.ipynb", as_version=4)
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "shape-ops"]
    c.source = c.source.replace('    "The same elements in a new shape (a view when possible); one axis may be -1."\n',
                                '    "The same elements in a new shape (a view when possible); one axis may be -1."\n'
                                + "    if not _FLOODED:\n        _FLOODED.append(1)\n" + textwrap.indent(FLOOD, "        "))
    assert "_FLOODED.append" in c.source
    nbformat.write(nb, inbox / "flood.ipynb")
    collect(ws, inbox, mod)
    done = subprocess.run([sys.executable, "-c", FLOOD_SCRIPT, str(ws.root), str(TIMEOUT)], capture_output=True,
                          text=True, timeout=1200, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(done.stdout) < 100_000
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["rss_mb"] < 200, f"tito's process peaked at {out['rss_mb']:.0f} MB"
    assert out["scores"]["flood"] == out["scores"]["complete"]
    for folder in ("autograded", "feedback"):
        for path in (ws.root / folder).rglob("*"):
            if path.is_file():
                assert path.stat().st_size < 4 * 2 ** 20, f"{path} is {path.stat().st_size} bytes"
