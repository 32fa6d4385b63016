"""Grading: nbgrader's workflow, with scores that a student's code cannot forge.

One file per stage:
- `setup`: nbgrader's configuration (from settings.ini) and its API; the folders it uses.
- `generate`: student versions (nbgrader), the course's answers to their visible checks, release to the exchange.
- `collect`: submissions into nbgrader's `submitted/` folder, from a folder or from the exchange.
- `probes`: a graded cell as a tape of probes (plain data), and replaying a tape against a module.
- `answer`: the answer process, run in the sandbox: export the submission, import it, replay the tapes.
- `sandbox`: the bubblewrap sandbox and its limits, and running the answer process under them.
- `judge`: the course's answers against the student's, compared as data: one verdict per graded cell.
- `autograde`: nbgrader's autograde with the judge in place of running the notebook; `--jobs N`.
- `report`: scores from the gradebook and why points were lost; `feedback`: the students' pages.
- `gradebook`: where the gradebook lives (a SQLite file or a shared server) and `--shard`; `deadlines`: due dates,
  lateness and a late penalty; `export`: the grades as a CSV for an LMS; `similarity`: pairs of similar submissions.
- `notebook_checks`: the same checks, run in a student's notebook. The `tito nbgrader` commands: `tito.commands.nbgrader`.

The rule they keep: the code that decides a score never runs in a process where the student's code has run, and
the student's process never holds an expected value or a hidden check's code (docs/GRADING.md).
"""
