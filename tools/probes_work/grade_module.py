"""Helper for converting graded cells: python tools/probes_work/grade_module.py JOBS NN  (generate, collect complete/untouched/catalogue bugs, autograde, print)."""
import time, shutil, tempfile, sys, json
from pathlib import Path
import nbformat
sys.path.insert(0, "tests/nbgrader")
from tito.course import Workspace
from tito.grading.generate import generate
from tito.grading.collect import collect
from tito.grading.autograde import autograde
from tito.grading.report import print_scores
def main():
    src = Workspace.find()
    tmp = Path(tempfile.mkdtemp())
    root = tmp/"course"
    shutil.copytree(src.root, root, ignore=shutil.ignore_patterns(".venv", ".git", "release", "submitted", "autograded", "feedback", "gradebook.db", "__pycache__"))
    ws = Workspace.find(root)
    mod = ws.module(sys.argv[2] if len(sys.argv) > 2 else "01")
    t = time.time()
    [rel] = generate(ws, [mod]); print("generate", time.time()-t, rel, sorted(p.name for p in rel.parent.iterdir()))
    inbox = tmp/"inbox"; inbox.mkdir()
    shutil.copy(rel, inbox/"untouched.ipynb")
    sol = nbformat.read(mod.notebook, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in sol.cells if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(rel, as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"): c.source = answers[c.metadata["nbgrader"]["grade_id"]]
    nbformat.write(nb, inbox/"complete.ipynb")
    from bug_catalogue import BUGS
    for b in BUGS[mod.number]:
        nb2 = nbformat.read(inbox/"complete.ipynb", as_version=4)
        for c in nb2.cells:
            if c.metadata.get("nbgrader", {}).get("grade_id") == b.grade_id:
                assert b.old in c.source, b.slug
                c.source = c.source.replace(b.old, b.new)
        nbformat.write(nb2, inbox/f"{b.slug}.ipynb")
    collect(ws, inbox, mod)
    t = time.time()
    rows = autograde(ws, mod, jobs=int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    print("autograde", time.time()-t)
    print_scores(mod, rows, details=True)
    print(tmp)


if __name__ == '__main__':
    main()
