"""nbdev export processors used by this course (listed in pyproject.toml `export_procs`)."""
import re

_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)[ \t]*\n?", re.MULTILINE)


def strip_solution_markers(cell):
    "Drop nbgrader's solution markers so they never reach the exported package."
    if cell.cell_type == "code" and "###" in cell.source:
        cell.source = _MARKER.sub("", cell.source)
