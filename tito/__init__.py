"""tito: the TinyTorch course command line (modules, tests, grading, milestones)."""
