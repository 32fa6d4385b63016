"""The checks of a graded cell, run in the student's own notebook while they work (a teaching aid, not a grade).

`with checks(...)` in a notebook replays the cell's tape on the notebook's own names and compares the answers with
the course's answers to the visible checks, shipped beside the release notebook (`NN_topic.expected.json`). The
words are the judge's. A grade never comes from here: graders run the same checks, hidden ones too, on the
exported code in a separate process (tito.grading.judge).
"""
from __future__ import annotations

import json
import types
from pathlib import Path

from tito.grading.judge import EXPECTED_SUFFIX, UNKNOWN, answer_fault, tape_digest
from tito.grading.probes import replay


SHOWN = 5  # failed checks a notebook lists in full; the others are counted (one mistake often fails many alike)


class CheckFailed(AssertionError):
    "A graded cell's checks failed in the notebook; the message says which, what was expected and what came back."

    def _render_traceback_(self) -> list[str]:
        "What IPython shows instead of a traceback: the message alone (the frames are the replay's, not the student's)."
        return [f"{type(self).__name__}: {self}"]


def _expected(exercise: str, digest: str):
    "The shipped answers for this block, or None (an instructor's notebook has none; a changed cell matches none)."
    for path in sorted(Path.cwd().glob(f"*{EXPECTED_SUFFIX}")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for entry in cells.values():
            if entry.get("exercise") == exercise:
                return entry["results"] if entry.get("tape") == digest else "changed"
    return None


def run_in_notebook(block, namespace: dict):
    "Replay the block on the notebook's names; print a line when every check passes, else raise CheckFailed."
    tape = block.tape.as_json()
    results = replay(tape, types.SimpleNamespace(**namespace))
    digest = tape_digest(tape)
    expected = _expected(block.exercise, digest)
    failures = []
    for i, (check, got) in enumerate(zip(block.tape.checks, results)):
        if why := answer_fault(check, expected[i] if isinstance(expected, list) else UNKNOWN, got):
            failures.append(f"check {check['name']!r}: {why}")
    if failures:
        more = [f"... and {len(failures) - SHOWN} more"] if len(failures) > SHOWN else []
        raise CheckFailed(f"`{block.exercise}`: {len(failures)} of {len(results)} checks failed:\n  " +
                          "\n  ".join(failures[:SHOWN] + more))
    if expected == "changed":
        print(f"`{block.exercise}`: this graded cell differs from the release; put the original back to compare")
    elif expected is None:
        print(f"`{block.exercise}`: {len(results)} checks ran (no course answers beside this notebook to compare with)")
    else:
        print(f"`{block.exercise}`: all {len(results)} checks passed")
