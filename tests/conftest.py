"""Settings shared by every test suite."""
import os

# `pytest -n 2` runs two test processes on a 2-core machine; with OpenBLAS's default of one thread per core each,
# four threads would fight over two cores and every matrix product would slow down several times over.
# One BLAS thread per process keeps the suite fast. (Set before numpy is imported by any test module.)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
