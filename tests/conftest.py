"""Settings and fixtures shared by every test suite."""
import os

# `pytest -n 2` runs two test processes on a 2-core machine; with OpenBLAS's default of one thread per core each,
# four threads would fight over two cores and every matrix product would slow down several times over.
# One BLAS thread per process keeps the suite fast. (Set before numpy is imported by any test module.)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402  (after the thread settings above)
import pytest  # noqa: E402

# CI runs the suites of modules 07 and 08 a second time as if numba (a dependency of the course) were not installed: `import numba` then
# raises ImportError, so tinytorch.perf takes the path it takes on a machine without numba.
if os.environ.get("TINYTORCH_TEST_WITHOUT_NUMBA") == "1":
    import sys
    sys.modules["numba"] = None


def pytest_addoption(parser):
    parser.addoption("--seeds", type=int, default=1, metavar="N",
                     help="run every test whose inputs are random (it uses the `seed` fixture, or `rng`, which takes "
                          "its seed from it) under seeds 0..N-1 (default 1: seed 0 only)")


def pytest_configure(config):
    config.addinivalue_line("markers", "seeded: its inputs are random (it uses the `seed` fixture); `--seeds N` "
                                       "runs it under N seeds (marked automatically)")
    if config.getoption("seeds") < 1:
        raise pytest.UsageError("--seeds must be at least 1")


def pytest_generate_tests(metafunc):
    "With `--seeds N` (N > 1), every test that uses the `seed` fixture runs once per seed, named `seed=K`."
    seeds = metafunc.config.getoption("seeds")
    if seeds > 1 and "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", range(seeds), indirect=True, ids=lambda s: f"seed={s}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "seed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.seeded)
    # The tests that run real tools (minutes each) first, the quick ones after, which then fill the gaps; with
    # `--dist worksteal` a process that runs out takes tests from the other's queue (with `load` it sat idle).
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def seed(request):
    """The seed of a test's random inputs: 0, or each of 0..N-1 under `--seeds N`. A test whose inputs are random
    takes them from `rng` (or seeds its own generators, and `manual_seed`, with this); a correct implementation must
    pass under every seed."""
    return getattr(request, "param", 0)


@pytest.fixture
def rng(seed):
    "A numpy Generator seeded with `seed`."
    return np.random.default_rng(seed)


@pytest.fixture
def leaf(rng):
    "A float64 Tensor with random normal data that requires grad."
    from tinytorch.core.tensor import Tensor

    def make(*shape, scale=1.0):
        return Tensor(rng.normal(size=shape) * scale, requires_grad=True)
    return make


@pytest.fixture
def recorded_ops():
    """The names of the ops whose results were built while the test runs, seen through the public
    `set_op_recorder` hook. A recorder that is already installed (module 02's autograd) keeps receiving every
    call and is put back afterwards, so this fixture never disturbs other tests."""
    import tinytorch.core.tensor as tensor_module
    from tinytorch.core.tensor import set_op_recorder
    previous = getattr(tensor_module, "_op_recorder", None)
    seen = []

    def recorder(out, op, inputs, attrs):
        seen.append(op)
        if previous is not None:
            previous(out, op, inputs, attrs)

    set_op_recorder(recorder)
    try:
        yield seen
    finally:
        set_op_recorder(previous)
