"""The judge: reads a module's graded cells as probes, and decides each exercise's points from answers as data.

The judge never imports student code. It traces each graded cell of the course's notebook into a tape
(`tito.grading.probes`), has the course's own package answer the tapes (the expected values) and the student's
code answer them in its own process (`tito.grading.sandbox.run_answer`), and compares the two as plain data.
Every verdict and reason comes from what the judge compared or observed: a check's values, a tape stopped at its
time limit, a process that died, a flood of output, a notebook that could not be exported or imported.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from tito.workspace import Module, TitoError, Workspace
from tito.grading.feedback import hidden_lines
from tito.grading.probes import UNCHECKED, Block, ProbeError, decode_data
from tito.grading.sandbox import Limits, package_source, run_answer
from tito.notebooks import cell_title, directives, grade_id, is_exercise, is_graded, parse_notebook

DESCRIBED = {"get", "item", "call", "op"}  # the steps of a tape that end with their description (probes.Tape.emit)
EXPECTED_SUFFIX = ".expected.json"  # beside a release notebook: the course's answers to its visible checks
DEFAULT_TOLERANCE = {"float16": (1e-3, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-7, 1e-10)}
PYTHON_FLOAT_TOLERANCE = (1e-5, 1e-8)  # a Python float may come from float32 work (`.item()`)
SAFE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")
SHOWN_ELEMENTS = 8  # numbers of an array shown in a message
VERDICT_ERRORS = {  # the error name a graded cell's output carries, by what the judge saw
    "wrong": "WrongAnswer", "not done": "NotDone", "timed out": "TimedOut", "died": "AnswerProcessDied",
    "limit": "LimitHit", "flood": "Flood", "not exported": "NotExported", "not imported": "NotImported",
    "no answer": "NoAnswer",
}


# --- the graded cells as probes -------------------------------------------------------------------------------------
@dataclass
class GradedCell:
    "One graded cell: the exercise it checks, the exercises it builds on, its points, its tape and its checks."
    grade_id: str
    exercise: str
    after: tuple
    points: float
    title: str  # the exercise as the student sees it ("Exercise 3: ... (grade_id `arithmetic`)")
    tape: dict
    checks: list

    @property
    def digest(self) -> str:
        return tape_digest(self.tape)


def tape_digest(tape: dict) -> str:
    "What identifies a tape: its steps and operands, not their descriptions (reprs differ between numpy versions)."
    return hashlib.sha256(json.dumps([_bare(tape["steps"]), tape["checks"]]).encode()).hexdigest()[:16]


def _bare(steps: list) -> list:
    "The steps without the description each get/item/call/op step ends with."
    return [step[:-1] if step[0] in DESCRIBED else step for step in steps]


@dataclass
class Probes:
    "A module's graded cells, in notebook order, and the modules their `tt` stands for."
    module: Module
    cells: list
    modules: list  # dotted module names, e.g. ["tinytorch.core.tensor"]
    package: str


def exported_modules(nb, package: str) -> list[str]:
    """The modules a notebook exports to: its `default_exp`, then every `#| export NAME` target, in order. A package's
    `__init__` (`perf.__init__`) is the package itself (`tinytorch.perf`)."""
    names = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        found = directives(cell.source)
        for key in ("default_exp", "export", "exporti", "exports"):
            target = (found.get(key) or "").strip().removesuffix(".__init__")
            if target and f"{package}.{target}" not in names:
                names.append(f"{package}.{target}")
    return names


def read_probes(ws: Workspace, module: Module, notebook: Optional[Path] = None) -> Probes:
    """Trace the graded cells of `notebook` (default: the module's, with hidden checks) into tapes. The cells run
    here, in tito's process, so this is only ever done with the course's own cells or a student's own release."""
    path = notebook or module.notebook
    try:
        nb = parse_notebook(path)
    except ValueError as e:
        raise TitoError(f"{ws.rel(path)}: not a readable notebook ({e})") from None
    titles = {grade_id(c): cell_title(nb, i) for i, c in enumerate(nb.cells) if is_exercise(c) and grade_id(c)}
    shared = {"np": np, "__name__": "__graded_cells__"}
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not is_graded(cell):
            continue
        gid = grade_id(cell)
        filename = f"<graded cell {gid}>"
        blocks: list = []
        shared["checks"] = lambda exercise, after=(), _h=hidden_lines(cell.source), _f=filename: \
            Block(exercise, after, hidden_lines=_h, filename=_f, on_exit=blocks.append)
        where = f"{ws.rel(path)}, graded cell `{gid}`"
        try:
            exec(compile(cell.source, filename, "exec"), shared)  # noqa: S102 - the course's own cell
        except ProbeError as e:
            raise TitoError(f"{where}: {e}") from None
        except Exception as e:  # noqa: BLE001
            raise TitoError(f"{where} could not be read as probes: {type(e).__name__}: {e}") from None
        if len(blocks) != 1:
            raise TitoError(f"{where} must hold one `with checks(...)` block (it holds {len(blocks)})")
        block = blocks[0]
        if block.exercise not in titles:
            raise TitoError(f"{where} checks `{block.exercise}`, which is not an exercise of this notebook")
        if any(c.exercise == block.exercise for c in cells):
            raise TitoError(f"{where} checks `{block.exercise}` again: one graded cell per exercise (merge them)")
        if unknown := [a for a in block.after if a not in titles]:
            raise TitoError(f"{where}: after= names {', '.join(unknown)}, not exercises of this notebook")
        if not block.tape.checks:
            raise TitoError(f"{where} has no checks")
        cells.append(GradedCell(gid, block.exercise, block.after, float(cell.metadata["nbgrader"].get("points", 0)),
                                titles[block.exercise], block.tape.as_json(), block.tape.checks))
    if not cells:
        raise TitoError(f"{ws.rel(path)} has no graded cells")
    return Probes(module, cells, exported_modules(nb, ws.lib_dir.name), ws.lib_dir.name)


# --- comparing --------------------------------------------------------------------------------------------------
def _kind(value) -> str:
    if isinstance(value, dict):
        for key in ("$raised", "$missing", "$object", "$array", "$scalar", "$tuple", "$dict", "$dtype", "$float"):
            if key in value:
                return key
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def show(value) -> str:
    "A value (as data) in a few words, for a message; names the student's code made up are never shown verbatim."
    kind = _kind(value)
    if kind == "$raised":
        name = _error_name(value)
        message = value.get("message", "")[:200]
        return f"raised {name}" + (f": {message}" if message else "")
    if kind == "$missing":
        return "nothing (an earlier step did not run)"
    if kind == "$object":
        name = value["$object"] if SAFE_NAME.match(str(value["$object"])) else "an object"
        return f"a {name}" + (f" holding {show(value['data'])}" if "data" in value else "")
    if kind in ("$array", "$scalar"):
        try:
            arr = np.asarray(decode_data(value))
        except (TypeError, ValueError):
            return "an unreadable array"
        if kind == "$scalar" or (arr.ndim == 0 and value.get("data") is not None):
            return f"{arr.dtype} {arr.item()!r}" + (" (a 0-d array)" if kind == "$array" else "")
        if value.get("data") is None:
            return f"{arr.dtype} array of shape {tuple(value['shape'])}"
        if arr.ndim == 1:  # the first numbers, or all of them
            body = np.array2string(arr[:SHOWN_ELEMENTS], precision=5, separator=", ", threshold=SHOWN_ELEMENTS)
            more = f" (first {SHOWN_ELEMENTS} of {arr.size})" if arr.size > SHOWN_ELEMENTS else ""
            return f"{arr.dtype} {tuple(arr.shape)} {body}{more}" if more else f"{arr.dtype} {body}"
        # nested as the array is (a mask's rows stay rows), the middle of each axis elided past SHOWN_ELEMENTS
        body = np.array2string(arr, precision=5, separator=", ", threshold=SHOWN_ELEMENTS, edgeitems=2)
        body = re.sub(r"\[ +", "[", " ".join(body.split()))  # numpy's line breaks and its padding after "["
        return f"{arr.dtype} {tuple(arr.shape)} {body}"
    if kind == "$dtype":
        return f"dtype {value['$dtype']}"
    try:
        text = repr(decode_data(value))
    except Exception:  # noqa: BLE001
        text = "an unreadable value"
    return text if len(text) <= 120 else text[:117] + "..."


def _error_name(value: dict) -> str:
    names = value.get("$raised") or ["an exception"]
    name = str(names[0])
    return name if SAFE_NAME.match(name) else "an exception"


def compare(expected, received, options: dict) -> Optional[str]:
    "None when `received` answers the check as `expected` does; else what was wrong, in words, with values."
    if "expect" in options and _kind(received) not in ("$raised", "$missing"):
        got, want = _plain(received), _plain(expected)
        if _has_non_finite(got) and not _has_non_finite(want):  # NaN fails no comparison
            return f"received {show(received)}: NaN or infinity, where the course's answer has none"
        if not _numbers_where_numbers(want, got):  # "nan" or 10**400 passes a comparison
            return f"received {show(received)}: not numbers where the course's answer has numbers"
        try:
            said = options["expect"](got, want)
        except Exception as e:  # noqa: BLE001 - a received value the check cannot read is a wrong answer
            return f"received {show(received)} ({type(e).__name__} when checking it)"
        return None if said in (None, True) else str(said or f"received {show(received)}")
    return _compare(expected, received, options, "")


def _plain(value):
    "Data as Python values for an `expect=` function: arrays, numbers, tuples; an object's data; errors as dicts."
    kind = _kind(value)
    if kind == "$object":
        return _plain(value["data"]) if "data" in value else value
    if kind in ("$raised", "$missing"):
        return value
    if kind == "list":
        return [_plain(v) for v in value]
    if kind == "$tuple":
        return tuple(_plain(v) for v in value["$tuple"])
    try:
        return decode_data(value)
    except (TypeError, ValueError, LookupError):
        return value


def _numbers_where_numbers(expected, received) -> bool:
    """Whether plain data `received` has numbers of a numeric dtype wherever `expected` (the course's answer) has
    them, in lists and tuples of the same lengths."""
    if isinstance(expected, (list, tuple)):
        return isinstance(received, (list, tuple)) and len(received) == len(expected) and \
            all(_numbers_where_numbers(e, r) for e, r in zip(expected, received))
    return not _numeric(expected) or _numeric(received)


def _numeric(value) -> bool:
    "Whether plain data is a number or an array of numbers (bool, integer, float)."
    if isinstance(value, (str, bytes, dict)):
        return False
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except (TypeError, ValueError):
        return False


def _has_non_finite(value) -> bool:
    "Whether plain data (`_plain`) holds a NaN or an infinity anywhere."
    if isinstance(value, (list, tuple)):
        return any(_has_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    try:
        array = np.asarray(value)
        return array.dtype.kind in "fc" and not np.isfinite(array).all()
    except (TypeError, ValueError):
        return False


def _compare(expected, received, options: dict, where: str) -> Optional[str]:
    at = f" at {where}" if where else ""
    ek, rk = _kind(expected), _kind(received)
    if ek == "$raised":
        return None if rk == "$raised" and _error_name(expected) in received["$raised"] else \
            f"expected it to raise {_error_name(expected)}{at}, received {show(received)}"
    if rk in ("$raised", "$missing"):
        return f"{where + ': ' if where else ''}it {show(received)}; expected {show(expected)}" if rk == "$raised" else \
            f"expected {show(expected)}{at}, received {show(received)}"
    if ek == "$object":  # known by its class alone, unless it holds data (a Tensor: compared by its data)
        if rk == "$object" and "data" in expected and "data" not in received:
            return (f"expected {show(expected)}{at}, received {show(received)} whose .data is not a numpy array "
                    "of numbers")
        if rk != "$object" or ("data" in expected) != ("data" in received) or \
                ("data" not in expected and received["$object"] != expected["$object"]):
            return f"expected {show(expected)}{at}, received {show(received)}"
        return _compare(expected["data"], received["data"], options, where) if "data" in expected else None
    if ek in ("$array", "$scalar") or (ek in ("float", "int", "bool") and rk in ("$array", "$scalar")):
        return _compare_numbers(expected, received, options, at)
    if ek in ("list", "$tuple"):
        exp = expected if ek == "list" else expected["$tuple"]
        if rk not in ("list", "$tuple"):
            return f"expected {show(expected)}{at}, received {show(received)}"
        got = received if rk == "list" else received["$tuple"]
        if len(exp) != len(got):
            return f"expected {len(exp)} items{at} ({show(expected)}), received {len(got)} ({show(received)})"
        for i, (e, r) in enumerate(zip(exp, got)):
            if why := _compare(e, r, options, f"{where}[{i}]"):
                return why
        return None
    if ek == "$dict":
        if rk != "$dict":
            return f"expected a dict{at}, received {show(received)}"
        exp, got = dict((json.dumps(k), v) for k, v in expected["$dict"]), \
            dict((json.dumps(k), v) for k, v in received["$dict"])
        if set(exp) != set(got):
            return f"expected the keys {sorted(exp)}{at}, received {sorted(got)[:20]}"
        for k in exp:
            if why := _compare(exp[k], got[k], options, f"{where}[{k}]"):
                return why
        return None
    if ek in ("float", "$float"):
        if rk not in ("float", "int", "$float"):
            return f"expected {show(expected)}{at}, received {show(received)}"
        rtol, atol = options.get("rtol", PYTHON_FLOAT_TOLERANCE[0]), options.get("atol", PYTHON_FLOAT_TOLERANCE[1])
        e, r = float(decode_data(expected)), float(decode_data(received))
        ok = np.isclose(r, e, rtol=rtol, atol=atol, equal_nan=True)
        return None if ok else f"expected {e!r}{at}, received {r!r}"
    if ek == "int" and rk in ("int", "float") and not isinstance(received, bool) and received == expected:
        return None
    if expected == received and type(expected) is type(received):
        return None
    return f"expected {show(expected)}{at}, received {show(received)}"


def _compare_numbers(expected, received, options: dict, at: str) -> Optional[str]:
    if _kind(received) not in ("$array", "$scalar", "float", "int", "bool", "$float"):
        return f"expected {show(expected)}{at}, received {show(received)}"
    try:
        exp, got = np.asarray(decode_data(expected)), np.asarray(decode_data(received))
    except (TypeError, ValueError):
        return f"expected {show(expected)}{at}, received {show(received)}"
    if isinstance(received, dict) and received.get("data") is None and "$array" in received:
        return f"expected {show(expected)}{at}, received {show(received)} (too large to compare)"
    if exp.shape != got.shape:
        return f"expected shape {exp.shape}{at}, received shape {got.shape} ({show(received)})"
    strict = options.get("dtype", True) and _kind(expected) in ("$array", "$scalar") and \
        _kind(received) in ("$array", "$scalar")
    if strict and exp.dtype != got.dtype:
        return f"expected dtype {exp.dtype}{at}, received {got.dtype} ({show(received)})"
    rtol, atol = _tolerance(expected, exp, got)
    rtol, atol = options.get("rtol", rtol), options.get("atol", atol)
    if exp.dtype.kind in "biu" and got.dtype.kind in "biu":
        ok = np.array_equal(exp, got)
    else:
        try:
            ok = bool(np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                                  equal_nan=True))
        except (TypeError, ValueError):
            ok = False
    if ok:
        return None
    where = ""
    with np.errstate(invalid="ignore"):
        bad = ~np.isclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol if exp.dtype.kind == "f" else 0,
                          atol=atol if exp.dtype.kind == "f" else 0, equal_nan=True)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        at_index = f" at {index}" if exp.ndim else ""
        where = f"; first difference{at_index}: expected {exp[index].item()!r}, received {got[index].item()!r}"
    return f"expected {show(expected)}{at}, received {show(received)}{where}"


def _tolerance(expected, exp: np.ndarray, got: np.ndarray) -> tuple:
    "(rtol, atol): of the less precise of the two float dtypes; a Python float may come from float32 work."
    if _kind(expected) in ("float", "$float"):
        return PYTHON_FLOAT_TOLERANCE
    found = [DEFAULT_TOLERANCE.get(str(a.dtype)) for a in (exp, got) if a.dtype.kind == "f"]
    found = [t for t in found if t] or [DEFAULT_TOLERANCE["float64"]]
    return max(found)


UNKNOWN = object()  # no course answer at hand (an instructor's notebook, the course checking itself)


def answer_fault(check: dict, expected, received) -> Optional[str]:
    """What is wrong with `received` as the answer to `check`, in words, or None. With the course's answer UNKNOWN,
    only an answer that raised (where no error was asked for) or never came is wrong."""
    if check["kind"] == "raises":
        return compare_raises(received, check["options"])
    if expected is UNKNOWN:
        return f"it {show(received)}" if _kind(received) in ("$raised", "$missing") else None
    return compare(expected, received, check["options"])


def compare_raises(received, options: dict) -> Optional[str]:
    "A `check.raises` answer: the error named in the check (or a subclass), with the promised words in its message."
    error = options["error"]
    if _kind(received) == "$missing":
        return f"expected it to raise {error}, received {show(received)}"
    if _kind(received) != "$raised":
        return f"expected it to raise {error}, but it returned {show(received)}"
    if error not in received["$raised"]:
        return f"expected it to raise {error}, but it {show(received)}"
    message = received.get("message", "")
    missing = [w for w in options.get("words", ()) if w not in message]
    if missing:
        return f"expected the {error}'s message to name {', '.join(map(repr, missing))}; received: {message[:300]!r}"
    return None


# --- verdicts ---------------------------------------------------------------------------------------------------
@dataclass
class Verdict:
    "The judge's decision on one graded cell."
    grade_id: str
    exercise: str
    title: str
    points: float
    max_points: float
    failures: list = field(default_factory=list)  # one line per failed check (hidden ones without their inputs)
    reason: str = ""  # what the judge observed beyond wrong answers: timed out, died, flood, not exported, ...
    kind: str = ""  # the reason's kind: a key of VERDICT_ERRORS, set where it was observed
    blame: str = ""  # "fix Exercise N first" when an exercise it builds on failed too
    not_done: bool = False  # it raised NotImplementedError: the exercise is still the release's stub
    visible_failed: list = field(default_factory=list)  # names of the visible checks that failed

    @property
    def passed(self) -> bool:
        return not self.failures and not self.reason

    def message(self) -> str:
        "The verdict in words, for the student: what was expected, with values, and where to look first."
        if self.passed:
            return ""
        head = f"{self.blame}; " if self.blame else ""
        if self.reason and not self.failures:
            return head + self.reason
        if self.not_done:
            return head + f"exercise `{self.exercise}` not done yet (it raises NotImplementedError)"
        shown = self.failures[:3] + ([f"and {len(self.failures) - 3} more"] if len(self.failures) > 3 else [])
        return head + "; ".join(shown) + (f" ({self.reason})" if self.reason else "")


def course_answers(ws: Workspace, probes: Probes, scratch: Path, limits: Limits,
                   timeout: int) -> list:
    "The course's own answers to every probe of `mod` (its package, outside the sandbox: it is trusted code)."
    src = package_source(ws)
    if src is None:
        raise TitoError(f"the course package ({ws.lib_dir.name}) cannot be found: the judge needs its answers")
    run = run_answer([c.tape for c in probes.cells], probes.modules, probes.package, scratch, limits, timeout,
                             path=src.parent, strict=True)
    return expected_answers(probes, run)


def expected_answers(probes: Probes, answers) -> list:
    "The course's answers, checked: a check the course's own code cannot pass is a mistake in the graded cell."
    out = []
    for index, cell in enumerate(probes.cells):
        results = answers.results.get(index)
        if results is None:
            why = answers.stopped.get(index) or answers.status.get("stage") or "no answers"
            raise TitoError(f"the course's own code could not answer graded cell `{cell.grade_id}`: {why} "
                            f"{show(answers.status['error']) if 'error' in answers.status else ''}".rstrip())
        if results and isinstance(results[-1], dict) and UNCHECKED in results[-1]:
            raise TitoError(f"graded cell `{cell.grade_id}`: in the course's own code, {results[-1][UNCHECKED][0]}, "
                            "and no check looks at that result, so the checks after it test something else")
        for check, result in zip(cell.checks, results):
            if wrong := answer_fault(check, UNKNOWN, result):
                raise TitoError(f"graded cell `{cell.grade_id}`, check {check['name']!r}: the course's own code "
                                f"fails it ({wrong})")
        out.append(results)
    return out


def judge(probes: Probes, expected: list, answers, detail: bool = False) -> list[Verdict]:
    """One verdict per graded cell, from the course's answers (`expected`, one list per cell) and the student's
    (`answers`, an AnswerRun). Hidden checks fail without their inputs or expected values. What the answer process
    said of a failed export or import is quoted only with `detail`, for a run that held no hidden check."""
    verdicts = []
    stage = answers.status.get("stage") or ""
    setup_failed = stage == "export failed" or stage.startswith("import of")
    for index, cell in enumerate(probes.cells):
        v = Verdict(cell.grade_id, cell.exercise, cell.title, 0.0, cell.points)
        results = answers.results.get(index)
        if results is None and setup_failed:
            v.kind = "not exported" if stage == "export failed" else "not imported"
            v.reason = f"its answer process reported that the notebook could not be {v.kind.split()[1]}"
            if detail and answers.status.get("error"):
                try:
                    v.reason += f" ({show(answers.status['error'])})"
                except Exception:  # noqa: BLE001 - written in the student's process: it may be anything
                    pass
        elif index in answers.stopped:
            stop = answers.stopped[index]
            v.kind, v.reason = ("died" if stop.kind == "not run" else stop.kind), stop.why
        elif not isinstance(results, list) or len(results) != len(cell.checks):
            v.kind, v.reason = "no answer", "its answers could not be read"
        else:
            hidden_number = 0
            for check, exp, got in zip(cell.checks, expected[index], results):
                hidden_number += check["hidden"]
                try:
                    why = answer_fault(check, exp, got)
                except Exception:  # noqa: BLE001 - not the data answer.py writes: the student's process forged it
                    why, got = "its answer is not readable data", None
                if why is None:
                    continue
                if check["hidden"]:  # how it failed was chosen by a process that held the hidden inputs
                    v.failures.append(f"hidden check {hidden_number} failed")
                else:
                    if _kind(got) == "$raised" and _error_name(got) == "NotImplementedError":
                        v.not_done = True
                    v.failures.append(f"check {check['name']!r}: {why}")
                    v.visible_failed.append(check["name"])
        if v.passed:
            v.points = cell.points
        verdicts.append(v)
    failing = {v.exercise: v for v in verdicts if not v.passed}
    graph = builds_on(probes)
    for v in failing.values():
        if root := fix_first(v.exercise, graph, failing):
            v.blame = f"fix {failing[root].title} first"
    return verdicts


def builds_on(probes: Probes) -> dict:
    "Each checked exercise -> every exercise its check builds on (its `after=`, and theirs), in notebook order."
    direct = {c.exercise: c.after for c in probes.cells}
    order = {c.exercise: i for i, c in enumerate(probes.cells)}
    graph = {}
    for exercise in direct:
        seen, todo = set(), list(direct[exercise])
        while todo:
            a = todo.pop()
            if a not in seen and a != exercise:
                seen.add(a)
                todo.extend(direct.get(a, ()))
        graph[exercise] = sorted(seen, key=lambda a: order.get(a, len(order)))
    return graph


def fix_first(exercise: str, graph: dict, failing) -> Optional[str]:
    """The failing exercise that `exercise` builds on and that builds on no failing one (the first such), else
    the first failing one it builds on, else None."""
    below = [a for a in graph.get(exercise, ()) if a in failing]
    roots = [a for a in below if not any(b in failing for b in graph.get(a, ()))]
    return next(iter(roots or below), None)


def verdict_kind(verdict: Verdict) -> str:
    "The kind of a failed verdict (a key of VERDICT_ERRORS), as the judge observed it."
    return verdict.kind or ("not done" if verdict.not_done else "wrong")


def with_visible_messages(graded: list, visible: list) -> list:
    """The verdicts of the graded run (every check, hidden ones too), with the words about visible checks taken
    from a run that held the visible checks only. The graded run's process saw the hidden inputs, so what it
    answered to a visible check (a message, a class name, values) could carry them: it is never shown."""
    said = {v.grade_id: v for v in visible}
    for v in graded:
        if v.kind in ("not exported", "not imported") and said.get(v.grade_id) and said[v.grade_id].kind == v.kind:
            v.reason = said[v.grade_id].reason  # the same failure, in the words of a run without hidden checks
        if not v.visible_failed:
            continue
        words = {}
        for line in (said[v.grade_id].failures if v.grade_id in said else []):
            for name in v.visible_failed:
                if line.startswith(f"check {name!r}: "):
                    words[name] = line
        hidden = [line for line in v.failures if line.startswith("hidden check ")]
        v.failures = [words.get(name, f"check {name!r}: wrong when graded (it passed without the hidden checks)")
                      for name in v.visible_failed] + hidden
    return graded


# --- the release's expected values ----------------------------------------------------------------------------
def expected_file(release_notebook: Path) -> Path:
    return release_notebook.with_name(release_notebook.stem + EXPECTED_SUFFIX)


def write_expected(path: Path, probes: Probes, expected: list):
    "The course's answers to the visible checks, keyed by graded cell and its tape (a changed cell does not match)."
    data = {"cells": {cell.grade_id: {"exercise": cell.exercise, "tape": cell.digest, "results": results}
                      for cell, results in zip(probes.cells, expected)}}
    path.write_text(json.dumps(data), encoding="utf-8")


def read_expected(path: Path, probes: Probes) -> list:
    "The shipped answers for `probes` (traced from the release); a one-line error when they are missing or stale."
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        raise TitoError(f"{path.name} is missing or unreadable: the course's answers to the checks ship with the "
                        "release (ask for the module's release again, or run `tito fetch`)") from None
    out = []
    for cell in probes.cells:
        entry = data.get(cell.grade_id)
        if entry is None or entry.get("tape") != cell.digest:
            raise TitoError(f"the graded cell `{cell.grade_id}` differs from the release it was shipped with: "
                            "put the original back (`tito module reset` keeps a backup of your notebook)")
        out.append(entry["results"])
    return out
