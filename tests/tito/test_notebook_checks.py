"""The graded cells' checks in a student's notebook (`tito.grading.notebook_checks`): what a failure looks like."""
from IPython.core.interactiveshell import InteractiveShell


def test_a_failed_check_shows_its_message_not_the_frames_of_the_replay(capsys):
    shell = InteractiveShell.instance()
    shell.run_cell("from tito.grading.notebook_checks import CheckFailed\n"
                   "def deep_inside_the_replay():\n"
                   "    raise CheckFailed('`compare`: 1 of 2 checks failed:\\n  check \\'the calls\\': expected 1.0')\n"
                   "deep_inside_the_replay()\n")
    shown = capsys.readouterr().out
    assert "CheckFailed: `compare`: 1 of 2 checks failed" in shown and "expected 1.0" in shown, shown
    assert "deep_inside_the_replay" not in shown and "Traceback" not in shown, shown
