"""Feedback shows a student what the release showed: nbgrader 0.9.6 builds feedback from the autograded notebook,
where the hidden tests are back, and shows them; this preprocessor takes them out again."""
import re

from nbgrader.preprocessors import NbGraderPreprocessor  # enabled by default, unlike nbconvert's Preprocessor

BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_FRAME = re.compile(r"(?:Cell In\s*\[\d*\]|Input In \[\d*\]|<ipython-input-[^>]*>), line (\d+)")


def hidden_lines(source: str) -> set:
    "1-based numbers of the lines of `source` inside (and on) the hidden-test markers."
    hidden, inside = set(), False
    for number, line in enumerate(source.split("\n"), 1):
        if BEGIN_HIDDEN in line:
            inside = True
        if inside:
            hidden.add(number)
        if END_HIDDEN in line:
            inside = False
    return hidden


def failing_line(output) -> int:
    "The line of the cell that raised (the last frame in the cell itself), or 0 when the traceback does not say."
    lines = [int(m.group(1)) for frame in output.get("traceback", []) if (m := CELL_FRAME.search(ANSI.sub("", frame)))]
    return lines[0] if lines else 0  # IPython lists the cell's own frame first, then the frames it called


class HideHiddenTests(NbGraderPreprocessor):
    """Feedback shows a student what the release showed: a graded cell's hidden-test region is removed, and an
    error raised inside it is reduced to one line that names the check, not the test or its expected values."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or BEGIN_HIDDEN not in cell.source:
            return cell, resources
        hidden = hidden_lines(cell.source)
        for i, output in enumerate(cell.get("outputs", [])):
            if output.get("output_type") == "error" and failing_line(output) in hidden | {0}:
                note = (f"{output.get('ename', 'Error')} in a hidden test of this check "
                        "(hidden tests are not shown: check the exercise text for what it requires)")
                cell.outputs[i] = {"output_type": "error", "ename": output.get("ename", "Error"), "evalue": note,
                                   "traceback": [note]}
        cell.source = "\n".join(line for n, line in enumerate(cell.source.split("\n"), 1) if n not in hidden)
        return cell, resources
