"""Settings and fixtures shared by every test suite."""
import os

# `pytest -n 2` runs two test processes on a 2-core machine; with OpenBLAS's default of one thread per core each,
# four threads would fight over two cores and every matrix product would slow down several times over.
# One BLAS thread per process keeps the suite fast. (Set before numpy is imported by any test module.)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402  (after the thread settings above)
import pytest  # noqa: E402

# CI runs module 07's suite a second time as if numba (in the `fast` extra) were not installed: `import numba` then
# raises ImportError, so tinytorch.perf takes the path it takes on a machine without numba.
if os.environ.get("TINYTORCH_TEST_WITHOUT_NUMBA") == "1":
    import sys
    sys.modules["numba"] = None


@pytest.fixture
def rng():
    return np.random.default_rng(0)


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
