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


def test_a_cell_with_many_failed_checks_lists_the_first_five_and_counts_the_rest(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no course answers here: a check fails only where the code raised
    shell = InteractiveShell.instance()
    shell.run_cell("from tito.grading.probes import checks\n"
                   "def halve(x):\n"
                   "    raise ValueError(f'no half of {x}')\n"
                   "with checks('halve') as (tt, check):\n"
                   "    for i in range(8):\n"
                   "        check(f'halve({i})', tt.halve(i))\n")
    shown = capsys.readouterr().out
    assert "`halve`: 8 of 8 checks failed" in shown and "... and 3 more" in shown, shown
    assert "check 'halve(4)'" in shown and "check 'halve(5)'" not in shown, shown
