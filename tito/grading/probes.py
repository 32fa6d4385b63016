"""Probes: what a graded check asks of a student's code, written down as data.

A graded cell of a module notebook is a block of probes:

    with checks("arithmetic", after=("as-array",)) as (tt, check):
        a, b = tt.Tensor([[1.0, 2.0], [3.0, 4.0]]), tt.Tensor([10.0, 20.0])
        check("a + b", (a + b).data)
        check.raises("add of (2, 3) and (4,)", ValueError,
                     lambda: tt.add(tt.Tensor(np.ones((2, 3))), tt.Tensor(np.ones(4))), words=("add", "(2, 3)"))

Nothing in the block computes. `tt` stands for the student's module (`tt.np` for numpy) and every use of it is
written down as a step of a *tape*: get an attribute, call, index, an operator. A tape is plain JSON. It is replayed
against the student's code in the student's process, which returns plain data for each check (`replay`); a judge,
in a process that never ran student code, compares those with the course's own answers to the same tape
(`tito.grading.judge`). So a probe can only ask questions; it cannot branch on, or loop over, what the student's
code returns (a result is not known while the tape is written), and comparing is never done where the student's
code runs.

This file needs only the standard library and numpy: the sandbox gets a copy of it (`tito.grading.answer`).
"""
from __future__ import annotations

import operator
import sys
from typing import Optional

import numpy as np

NAMESPACE, NUMPY = 0, 1  # the two roots of every tape: the module under test, and numpy
UNCHECKED = "$unchecked"  # the last result of a strict replay: steps that raised with nothing looking
MAX_TEXT = 2000  # characters kept of a string or an exception message the student's code returns
MAX_STEP_TEXT = 120  # characters of a step's description (what a failure message quotes)
MAX_ITEMS = 10_000  # items kept of a list, tuple or dict the student's code returns
MAX_ELEMENTS = 1_000_000  # elements of an array the student's code returns (beyond: its shape and dtype only)
OPERATORS = {  # Python's operators, by the name a tape uses
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
}
BUILTINS = {"int": int, "float": float, "bool": bool, "complex": complex, "slice": slice, "tuple": tuple,
            "list": list, "len": len}  # the built-in functions and types a probe may hand over, by name


class ProbeError(Exception):
    "A probe that cannot be written down as a tape (a mistake in the graded cell, not in the student's code)."


# --- writing a tape -------------------------------------------------------------------------------------------------
class Sym:
    "A value the tape will have when it is replayed: every use of it is written down, nothing is computed."
    __slots__ = ("_tape", "_id", "_text")
    __array_ufunc__ = None  # numpy arrays defer to Sym's reflected operators: np.ones(2) + sym is a step too
    __array_priority__ = 10_000

    def __init__(self, tape: "Tape", ref: int, text: str):
        object.__setattr__(self, "_tape", tape)
        object.__setattr__(self, "_id", ref)
        object.__setattr__(self, "_text", text)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._tape.emit("get", self, name, text=f"{self._text}.{name}")

    def __setattr__(self, name, value):
        self._tape.record(["set", self._tape.encode(self), name, self._tape.encode(value)])

    def __getitem__(self, key):
        return self._tape.emit("item", self, key, text=f"{self._text}[{_short(key)}]")

    def __setitem__(self, key, value):
        self._tape.record(["setitem", self._tape.encode(self), self._tape.encode(key), self._tape.encode(value)])

    def __call__(self, *args, **kwargs):
        shown = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
        return self._tape.emit("call", self, args, kwargs, text=f"{self._text}({shown})")

    def __enter__(self):
        enter = self._tape.emit("get", self, "__enter__", text=f"{self._text}.__enter__")
        return self._tape.emit("call", enter, (), {}, text=f"with {self._text}")

    def __exit__(self, *exc):
        self._tape.emit("call", self._tape.emit("get", self, "__exit__", text=f"{self._text}.__exit__"),
                        (None, None, None), {}, text=f"end of with {self._text}")
        return False

    def __hash__(self):
        return id(self)

    def _refuse(self, *_):
        raise ProbeError(f"a probe cannot use the value of {self._text} while its tape is written (no `if`, `for`, "
                         "`len`, `float` or `bool` of a result): pass it to `check` and let the judge compare")

    __bool__ = __iter__ = __len__ = __index__ = __float__ = __int__ = __array__ = __contains__ = _refuse

    def __repr__(self):
        return f"<probe value {self._text}>"


def _operator(name, reflected=False):
    symbol = name

    def method(self, *others):
        operands = (others[0], self) if reflected else (self, *others)
        text = f"{name}({', '.join(_short(o) for o in operands)})"
        return self._tape.emit("op", symbol, operands, text=text)
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Sym, f"__{_name}__", _operator(_name))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(Sym, f"__r{_name}__", _operator(_name, reflected=True))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Sym, f"__{_name}__", _operator(_name))


def _short(value) -> str:
    "How a value reads in a step's description (and in a failure message)."
    if isinstance(value, Sym):
        return value._text
    if isinstance(value, np.ndarray):
        return f"<{value.dtype} array {value.shape}>" if value.size > 6 else f"np.array({value.tolist()})"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_short(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else \
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, type):
        return value.__name__
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Tape:
    "The steps of one graded cell, and its checks (each one is a step too: the value is taken when it is checked)."

    def __init__(self, hidden_lines=frozenset(), filename: str = ""):
        self.steps: list = []
        self.checks: list = []  # {"name", "kind", "hidden", "options"}
        self._next = 2
        self._unwritten: dict = {}  # t.data steps taken out by _tensor_of_data, written back if a later step uses them
        self._hidden_lines, self._filename = set(hidden_lines), filename
        self.tt = Sym(self, NAMESPACE, "tt")
        self.np = Sym(self, NUMPY, "np")

    # the student's namespace also answers `tt.np`: numpy on the side that replays
    def record(self, step: list):
        self.steps.append(step)

    def emit(self, kind: str, *operands, text: str) -> Sym:
        ref = self._next
        self._next += 1
        if kind == "get" and operands[0]._id == NAMESPACE and operands[1] == "np":
            self._next -= 1
            return self.np
        if kind == "call":
            target, args, kwargs = operands
            self.record(["call", ref, self.encode(target), [self.encode(a) for a in args],
                         [[k, self.encode(v)] for k, v in kwargs.items()]])
        elif kind == "op":
            name, values = operands
            self.record(["op", ref, name, [self.encode(v) for v in values]])
        elif kind == "get":
            self.record(["get", ref, self.encode(operands[0]), operands[1]])
        else:  # item
            self.record(["item", ref, self.encode(operands[0]), self.encode(operands[1])])
        text = text if len(text) <= MAX_STEP_TEXT else text[:MAX_STEP_TEXT - 3] + "..."  # long chains stay linear
        self.steps[-1].append(text)
        return Sym(self, ref, text)

    def encode(self, value):
        "A value the probe gives the student's code, as JSON (results of earlier steps by reference)."
        if isinstance(value, Sym):
            if value._tape is not self:
                raise ProbeError(f"{value._text} belongs to another graded cell")
            if value._id in self._unwritten:
                self.steps.append(self._unwritten.pop(value._id))
            return {"$ref": value._id}
        if type(value) in (tuple, list):
            items = [self.encode(v) for v in value]
            return {"$tuple": items} if type(value) is tuple else items
        if type(value) is dict:
            return {"$dict": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if isinstance(value, slice):
            return {"$slice": [self.encode(value.start), self.encode(value.stop), self.encode(value.step)]}
        if callable(value) and not isinstance(value, type) and not isinstance(value, np.ufunc):
            raise ProbeError("a probe cannot hand a Python function to the student's code; call it in the probe "
                             "(its steps are recorded) or use the student's own functions through `tt`")
        try:
            return encode_data(value)
        except TypeError as e:
            raise ProbeError(f"a probe cannot hand {type(value).__name__} to the student's code: {e}") from None

    def _is_hidden(self) -> bool:
        """Whether the statement of the graded cell that led to this check lies in its hidden region (the outermost
        frame in the cell: a helper defined above may be called from below the marker)."""
        frame, line = sys._getframe(2), None
        while frame is not None:
            if frame.f_code.co_filename == self._filename:
                line = frame.f_lineno
            frame = frame.f_back
        return line in self._hidden_lines

    def check(self, name: str, value, **options):
        "The judge compares `value` (a result of the student's code) with the course's answer to the same steps."
        self._add_check(name, "value", options)
        self.record(["check", len(self.checks) - 1, self._tensor_of_data(value)])

    def _tensor_of_data(self, value):
        """`t.data` just taken is checked as `t` (the judge compares an object holding an array by that array): a
        check of a tensor's values then looks like a check that the call making it raises, and neither gives the
        other away to the student's process. If a later step uses that `t.data`, the step is written there, so it
        reads `t.data` at that point: the same array unless the cell assigned a new one to `t.data` in between."""
        last = self.steps[-1] if self.steps else None
        if isinstance(value, Sym) and value._tape is self and last is not None and last[:2] == ["get", value._id] \
                and last[3] == "data" and last[2].get("$ref") not in (NAMESPACE, NUMPY):
            self._unwritten[value._id] = self.steps.pop()
            return last[2]
        return self.encode(value)

    def raises(self, name: str, error: type, action, words=(), **options):
        """Calling `action` (a function of no arguments, run now to write its steps) must raise `error`. Its steps
        and its check are written as a value check's are: the student's process cannot tell which calls are
        meant to raise (it could otherwise claim any error, with the inputs in its message, for those alone)."""
        if not (isinstance(error, type) and issubclass(error, BaseException)):
            raise ProbeError(f"check {name!r}: raises() needs an exception class, not {error!r}")
        self._add_check(name, "raises", {**options, "error": error.__name__, "words": list(words)})
        raising = action()
        if not (isinstance(raising, Sym) and raising._tape is self):  # the step that must raise is the one checked
            raise ProbeError(f"check {name!r}: the action of raises() must return the call that raises (e.g. "
                             "`lambda: tt.Tensor([1]) @ tt.Tensor([1, 2])`), not a value of its own")
        self.record(["check", len(self.checks) - 1, self.encode(raising)])

    def _add_check(self, name: str, kind: str, options: dict):
        if not isinstance(name, str) or not name:
            raise ProbeError("every check needs a name, e.g. check(\"a + b\", (a + b).data)")
        if any(c["name"] == name for c in self.checks):
            raise ProbeError(f"two checks are called {name!r} in one graded cell")
        if "expect" in options and not callable(options["expect"]):
            raise ProbeError(f"check {name!r}: expect= must be a function (received, expected) -> message or None")
        self.checks.append({"name": name, "kind": kind, "hidden": self._is_hidden(), "options": options})

    def as_json(self) -> dict:
        "What the student's process is given: the steps only (check names, hidden flags and options stay here)."
        return {"steps": self.steps, "checks": len(self.checks)}


class CheckFunction:
    "The `check` of a graded cell: `check(name, value, rtol=, atol=, dtype=, expect=)` and `check.raises(...)`."

    def __init__(self, tape: Tape):
        self._tape = tape

    def __call__(self, name: str, value, **options):
        self._tape.check(name, value, **options)

    def raises(self, name: str, error: type, action, words=(), **options):
        self._tape.raises(name, error, action, words, **options)


# --- data that crosses between the processes ------------------------------------------------------------------------
def encode_data(value):
    "Plain data as JSON: numbers, strings, None, arrays, numpy scalars and dtypes, tuples, lists, dicts, slices."
    if isinstance(value, np.generic):  # before float: np.float64 is a float, but not a weak Python scalar
        if value.dtype.kind not in "biuf":
            raise TypeError(f"a numpy {value.dtype}")
        return {"$scalar": value.dtype.name, "data": encode_data(value.item())}
    if value is None or type(value) in (bool, str, int):
        return value
    if type(value) is float:
        return value if value == value and abs(value) != float("inf") else {"$float": repr(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"an array of dtype {value.dtype}")
        return {"$array": value.dtype.name, "shape": list(value.shape), "data": _plain_list(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode_data(v) for v in value]}
    if isinstance(value, list):
        return [encode_data(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode_data(k), encode_data(v)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"$slice": [encode_data(value.start), encode_data(value.stop), encode_data(value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    if isinstance(value, np.dtype):
        return {"$dtype": value.name}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"$dtype": np.dtype(value).name, "type": True}
    if BUILTINS.get(getattr(value, "__name__", None)) is value:
        return {"$builtin": value.__name__}
    raise TypeError(f"{type(value).__name__} is not plain data")


def _plain_list(array: np.ndarray) -> list:
    "The elements of `array`, flat; non-finite floats as {'$float': 'nan'} (JSON has no nan or inf)."
    flat = array.ravel().tolist()
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        flat = [x if x == x and abs(x) != float("inf") else {"$float": repr(x)} for x in flat]
    return flat


def decode_data(obj, env=None):
    "The inverse of encode_data (and of `result_data`); `{'$ref': i}` is looked up in `env`."
    if isinstance(obj, list):
        return [decode_data(v, env) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "$ref" in obj:
        if env is None or obj["$ref"] not in env:
            raise LookupError(obj["$ref"])
        return env[obj["$ref"]]
    if "$float" in obj:
        return float(obj["$float"])
    if "$array" in obj:
        dtype = np.dtype(obj["$array"])
        if dtype.kind not in "biuf":
            raise TypeError(f"dtype {dtype}")
        return np.array([decode_data(x) for x in obj["data"]], dtype=dtype).reshape(obj["shape"])
    if "$scalar" in obj:
        dtype = np.dtype(obj["$scalar"])
        if dtype.kind not in "biuf":
            raise TypeError(f"dtype {dtype}")
        return dtype.type(decode_data(obj["data"]))
    if "$tuple" in obj:
        return tuple(decode_data(v, env) for v in obj["$tuple"])
    if "$dict" in obj:
        return {decode_data(k, env): decode_data(v, env) for k, v in obj["$dict"]}
    if "$slice" in obj:
        return slice(*(decode_data(v, env) for v in obj["$slice"]))
    if "$ellipsis" in obj:
        return Ellipsis
    if "$dtype" in obj:
        dtype = np.dtype(obj["$dtype"])
        return dtype.type if obj.get("type") else dtype
    if "$builtin" in obj:
        return BUILTINS[obj["$builtin"]]
    return {k: decode_data(v, env) for k, v in obj.items()}


def result_data(value, depth: int = 0):
    """What the student's code returned, as plain data the judge can compare; never raises, never runs away.

    Arrays and numbers as they are; an object with an array `.data` (a Tensor) as {'$object': class, 'data': ...};
    anything else as its class name only."""
    try:
        if depth > 20:
            return {"$object": "nested too deep"}
        if isinstance(value, np.generic):
            return encode_data(value) if value.dtype.kind in "biuf" else {"$object": value.dtype.name}
        if value is None or type(value) in (bool, int, float):
            return encode_data(value)
        if isinstance(value, str):
            return value[:MAX_TEXT] if type(value) is str else {"$object": _class_name(value)}
        if isinstance(value, np.ndarray) and type(value) is np.ndarray:
            if value.dtype.kind not in "biuf":
                return {"$object": f"ndarray of {value.dtype.name}"}
            if value.size > MAX_ELEMENTS:
                return {"$array": value.dtype.name, "shape": list(value.shape), "data": None}
            return encode_data(np.array(value))
        if isinstance(value, np.dtype):
            return {"$dtype": value.name}
        if isinstance(value, type) and issubclass(value, np.generic):
            return {"$dtype": np.dtype(value).name, "type": True}
        if type(value) in (tuple, list):
            items = [result_data(v, depth + 1) for v in value[:MAX_ITEMS]]
            return {"$tuple": items} if type(value) is tuple else items
        if type(value) is dict:
            return {"$dict": [[result_data(k, depth + 1), result_data(v, depth + 1)]
                              for k, v in list(value.items())[:MAX_ITEMS]]}
        data = getattr(value, "data", None)
        if isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind in "biuf":  # a numpy scalar kept as it is
            return {"$object": _class_name(value), "data": result_data(data, depth + 1)}
        return {"$object": _class_name(value)}
    except BaseException:  # noqa: BLE001 - a hostile __getattr__ or __len__ is the student's answer, not a crash
        return {"$object": "unreadable"}


def _class_name(value) -> str:
    try:
        name = type(value).__name__
    except BaseException:  # noqa: BLE001
        return "unreadable"
    return name if isinstance(name, str) else "unreadable"


def raised_data(error: BaseException) -> dict:
    "An exception the student's code raised: its classes (most specific first) and its message, as data."
    try:
        names = [c.__name__ for c in type(error).__mro__ if isinstance(getattr(c, "__name__", None), str)]
    except BaseException:  # noqa: BLE001
        names = ["BaseException"]
    try:
        message = str(error)
    except BaseException:  # noqa: BLE001
        message = ""
    return {"$raised": [n[:100] for n in names[:20]], "message": message[:MAX_TEXT] if isinstance(message, str) else ""}


# --- replaying a tape -----------------------------------------------------------------------------------------------
class _Failed:
    "The result of a step that raised, or that used one that did."

    def __init__(self, record: dict, text: str):
        self.record, self.text = record, text


def replay(tape: dict, namespace, strict: bool = False) -> list:
    """Run the steps of `tape` against `namespace` (the module under test); one result per check, as data:
    the checked value, or {'$raised': ...} for a check whose steps raised, or whose `raises` action did.
    `strict` (the course's own answers): a step that raised while no later step or check uses its result would
    make the checks after it test something else than they say, so the results end with
    {'$unchecked': [what raised, ...]}."""
    env = {NAMESPACE: namespace, NUMPY: np}
    results: list = [None] * tape["checks"]
    raised: list = []
    used = _references(tape["steps"])
    _run(tape["steps"], env, results, raised=raised, used=used)
    unchecked = [text for ref, text in raised if ref is None or ref not in used]
    return results + [{UNCHECKED: unchecked}] if strict and unchecked else results


def _references(obj, found: set = None) -> set:
    "Every `{'$ref': i}` in a tape's steps."
    found = set() if found is None else found
    if isinstance(obj, dict):
        if "$ref" in obj:
            found.add(obj["$ref"])
        for value in obj.values():
            _references(value, found)
    elif isinstance(obj, list):
        for value in obj:
            _references(value, found)
    return found


def _run(steps: list, env: dict, results: list, raised: list = None, used=frozenset()):
    """Run the steps; a check's result is the first error since the previous check of a step whose result nothing
    uses (`loss.backward()`, an assignment), if one raised: what it breaks later (a `.grad` still None) is not the
    cause. An error in a step whose result is used reaches its checks through that result."""
    first = None
    for step in steps:
        kind = step[0]
        try:
            if kind == "check":
                _, index, value = step
                results[index] = _checked(value, env) if first is None else first
                first = None
                continue
            operands = _operands(step, env)
            if kind == "get":
                out = getattr(operands[0], step[3])
            elif kind == "item":
                out = operands[0][operands[1]]
            elif kind == "call":
                out = operands[0](*operands[1], **dict(operands[2]))
            elif kind == "op":
                out = OPERATORS[step[2]](*operands[0])
            elif kind == "set":
                setattr(operands[0], step[2], operands[1])
                continue
            elif kind == "setitem":
                operands[0][operands[1]] = operands[2]
                continue
            else:
                raise ProbeError(f"unknown step {kind!r}")
            env[step[1]] = out
        except _UsesFailed as e:
            failed = e.failed
        except Exception as error:  # noqa: BLE001 - the student's code may raise anything; it is the answer
            failed = _Failed(raised_data(error), step[-1] if isinstance(step[-1], str) else kind)
        else:
            continue
        makes = kind in ("get", "item", "call", "op")
        if makes:
            env[step[1]] = failed
        if first is None and not (makes and step[1] in used):  # nothing refers to it: no check would see it
            first = {**failed.record, "step": failed.text[:200]}
        _note_raised(raised, step, failed.record)


def _note_raised(raised: Optional[list], step: list, record: dict):
    "Note a top-level step that raised: its result's reference (None for an assignment) and what it was."
    if raised is None or step[0] == "check":
        return
    ref = step[1] if step[0] in ("get", "item", "call", "op") else None
    what = step[-1] if ref is not None and isinstance(step[-1], str) else f"an assignment ({step[0]})"
    error = (record.get("$raised") or ["a failed step"])[0]
    raised.append((ref, f"{what} raised {error}: {record.get('message', '')}".rstrip(": ")))


class _UsesFailed(Exception):
    def __init__(self, failed: _Failed):
        super().__init__(failed.text)
        self.failed = failed


def _resolve(obj, env):
    "Decode an operand; a result that failed (or never ran) stops the step that needs it."
    try:
        value = decode_data(obj, env)
    except LookupError:
        raise _UsesFailed(_Failed({"$missing": True}, "a step that did not run")) from None
    failed = _find_failed(value)
    if failed is not None:
        raise _UsesFailed(failed)
    return value


def _find_failed(value):
    if isinstance(value, _Failed):
        return value
    if type(value) in (list, tuple):
        return next((f for v in value if (f := _find_failed(v)) is not None), None)
    if type(value) is dict:
        return next((f for v in value.values() if (f := _find_failed(v)) is not None), None)
    return None


def _operands(step: list, env: dict) -> list:
    kind = step[0]
    if kind == "get":
        return [_resolve(step[2], env)]
    if kind == "item":
        return [_resolve(step[2], env), _resolve(step[3], env)]
    if kind == "call":
        return [_resolve(step[2], env), [_resolve(a, env) for a in step[3]],
                [(k, _resolve(v, env)) for k, v in step[4]]]
    if kind == "op":
        return [[_resolve(v, env) for v in step[3]]]
    if kind == "set":
        return [_resolve(step[1], env), _resolve(step[3], env)]
    if kind == "setitem":
        return [_resolve(step[1], env), _resolve(step[2], env), _resolve(step[3], env)]
    return []


def _checked(value, env):
    try:
        decoded = decode_data(value, env)
    except LookupError:
        return {"$missing": True}
    failed = _find_failed(decoded)
    if failed is not None:
        return {**failed.record, "step": failed.text[:200]}
    return result_data(decoded)


# --- the `with checks(...)` block ---------------------------------------------------------------------------------
class Block:
    "What `checks(exercise, after=...)` returns: a context manager that yields (tt, check) and writes one tape."

    def __init__(self, exercise: str, after=(), *, hidden_lines=frozenset(), filename: str = "", on_exit=None):
        if isinstance(after, str):
            after = (after,)
        self.exercise, self.after = exercise, tuple(after)
        self.tape = Tape(hidden_lines, filename)
        self._on_exit = on_exit

    def __enter__(self):
        return self.tape.tt, CheckFunction(self.tape)

    def __exit__(self, kind, error, tb):
        if kind is None and self._on_exit is not None:
            self._on_exit(self)
        return False


def checks(exercise: str, after=()):
    """In a student's notebook: run the block's visible checks on the notebook's own code right away and compare
    with the course's answers shipped beside it (`tito.grading.expected`). Graders and `tito module complete`
    read the same cells with their own `checks`."""
    import inspect

    caller = inspect.stack()[1].frame.f_globals
    from tito.grading.notebook_checks import run_in_notebook  # the notebook side: tito is installed with the course

    return Block(exercise, after, filename=inspect.stack()[1].filename,
                 on_exit=lambda block: run_in_notebook(block, caller))


