"""The op tables of modules 03, 05 and 06, run again on the fast path: every fast kernel must pass the tests its plain
op passes (values, float64 gradient checks with a random upstream gradient, PyTorch oracles, models built on the ops).

The test files are imported by path and their tests adopted here under `<file>__<test>`, with an autouse fixture that
switches the fast path on around each. A few tests look at the plain path itself rather than at results; they are
named in PLAIN_PATH_ONLY with the reason, and skipped here (they still run in their own suite)."""
import collections
import importlib.util
import inspect
from pathlib import Path

import pytest
from _pytest.fixtures import getfixturemarker

import tinytorch.core.tensor as tensor_module
import tinytorch.perf as perf
from tinytorch.core.tensor import set_op_recorder

TESTS = Path(__file__).resolve().parents[1]
FILES = [
    "03_layers/test_layers_gradcheck.py", "03_layers/test_layers_behaviour.py", "03_layers/test_layers_inputs.py",
    "03_layers/test_layers_oracle.py",
    "04_training/test_losses.py", "04_training/test_losses_oracle.py", "04_training/test_optim.py",
    "04_training/test_optim_oracle.py",
    "05_attention/test_attention_sdpa.py", "05_attention/test_attention_masks.py", "05_attention/test_attention_layers.py",
    "05_attention/test_attention_inputs.py", "05_attention/test_attention_oracle.py",
    "06_transformer/test_transformer_gradients.py", "06_transformer/test_transformer_model.py",
    "06_transformer/test_transformer_generate.py", "06_transformer/test_transformer_inputs.py",
    "06_transformer/test_transformer_oracle.py",
]
CONFTESTS = ["05_attention/conftest.py", "06_transformer/conftest.py"]  # their fixtures, which the tests above use
PLAIN_PATH_ONLY = {  # "<file>::<test>" -> why it cannot pass on the fast path, whatever the kernels compute
    "03_layers/test_layers_gradcheck.py::test_linear_is_one_op_and_skips_the_input_gradient_when_not_needed":
        "it asserts the recorded op name 'linear' (module 07's test_perf_kernels checks the same for 'fast_linear')",
    "03_layers/test_layers_gradcheck.py::test_fused_rules_are_registered_and_a_broken_one_is_caught":
        "it breaks the plain ops' gradient rules (test_perf_kernels and test_compiled_attention break the fast ones)",
    "04_training/test_losses.py::test_cross_entropy_records_one_fused_node":
        "it asserts the recorded op name 'cross_entropy' (the fast path records 'fast_compiled_cross_entropy')",
    "04_training/test_losses.py::test_cross_entropy_gradcheck_catches_a_wrong_rule":
        "it breaks the plain op's gradient rule (test_compiled_attention breaks the fast one)",
}
FAST_OPS = {"fast_linear"} | (  # the ops the fast path records: compiled loops where numba is
    {"fast_compiled_gelu", "fast_compiled_layer_norm", "fast_compiled_softmax", "fast_compiled_cross_entropy",
     "fast_compiled_attention"}
    if perf.numba is not None else {"fast_gelu", "fast_layer_norm", "fast_attention"})


def _load(relative: str):
    "The module at tests/<relative>, imported under a name of its own (its own suite imports it too)."
    path = TESTS / relative
    spec = importlib.util.spec_from_file_location(f"perf_fast_path__{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skipped(reason: str):
    "A test that reports, as a skip, why a file's tests could not be adopted (e.g. an oracle file without torch)."
    def test():
        pytest.skip(reason)
    return test


def _adopt(namespace: dict):
    "Put every test of FILES into `namespace` as '<file>__<test>', and every fixture they define under its own name."
    for relative in CONFTESTS:
        for name, obj in vars(_load(relative)).items():
            if getfixturemarker(obj) is not None:
                namespace[name] = obj
    for relative in FILES:
        stem = Path(relative).stem
        try:
            module = _load(relative)
        except pytest.skip.Exception as skipped:       # e.g. an oracle file without torch installed
            namespace[f"{stem}__skipped"] = _skipped(f"{relative}: {skipped}")
            continue
        marks = getattr(module, "pytestmark", [])
        for name, obj in vars(module).items():
            if getfixturemarker(obj) is not None:
                assert namespace.get(name, obj) is obj or name not in namespace, f"fixture {name} defined twice"
                namespace[name] = obj
            elif name.startswith("test_") and inspect.isfunction(obj) and obj.__module__ == module.__name__:
                for mark in marks if isinstance(marks, list) else [marks]:
                    obj = mark(obj) if mark.name != "exercise" else obj
                # here it exercises the fast kernels, switched on by `enable` (whose check builds on every kernel)
                obj.pytestmark = [m for m in getattr(obj, "pytestmark", []) if m.name != "exercise"]
                obj = pytest.mark.exercise("switch")(obj)
                if f"{relative}::{name}" in PLAIN_PATH_ONLY:
                    obj = pytest.mark.skip(reason=f"looks at the plain path: {PLAIN_PATH_ONLY[f'{relative}::{name}']}")(obj)
                namespace[f"{stem}__{name}"] = obj


_adopt(globals())
RECORDED = collections.Counter()  # fast op name -> how often the adopted tests recorded it


@pytest.fixture(autouse=True)
def fast_path():
    "The fast path on around each adopted test, and the fast ops it recorded counted."
    previous = tensor_module._op_recorder

    def recorder(out, op, inputs, attrs):
        if op in FAST_OPS:
            RECORDED[op] += 1
        if previous is not None:
            previous(out, op, inputs, attrs)

    perf.enable()
    set_op_recorder(recorder)
    try:
        yield
    finally:
        set_op_recorder(previous)
        perf.disable()


@pytest.mark.exercise("switch")
def test_zz_every_fast_kernel_was_taken_by_the_adopted_tests(request):
    "Runs last in this file: the tables above exercised every fast kernel (when the whole file ran in this process)."
    config = request.config
    if hasattr(config, "workerinput"):
        pytest.skip("pytest-xdist shares this file's tests among processes: the count is per process")
    if config.getoption("keyword") or config.getoption("markexpr") or any("::" in arg for arg in config.args):
        pytest.skip("only part of this file was selected")
    assert set(RECORDED) == FAST_OPS, RECORDED
