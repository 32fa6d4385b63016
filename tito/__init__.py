import os as _os

# Notebooks, tests and milestones that tito runs load numpy after this: give them OpenBLAS's shorter thread spin
# (see tinytorch/__init__.py for why).
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "26")
