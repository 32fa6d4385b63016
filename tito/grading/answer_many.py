"""Many trusted submissions answered by one Python, one after another: the answer process of `tito.grading.trusted`.

    python answer_many.py JOBS

JOBS (JSON) is a list of `[REQUEST, OUT]` pairs, each what `answer.py REQUEST OUT` takes. Copied beside `answer.py`
and `probes.py`, it runs `answer.main` for each pair, then forgets what that submission left behind: the modules of
its package, its folders on the import path, the working folder, and whatever it changed in `probes` (a submission
may replace `probes.replay`). Only for the course's own code: nothing here stops a submission that wants to outlive
its turn.
"""
import importlib
import json
import os
import sys
from pathlib import Path


def main(jobs_path: str) -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import answer
    import probes

    pristine = dict(vars(probes))
    path, cwd = list(sys.path), os.getcwd()
    for request, out in json.loads(Path(jobs_path).read_text(encoding="utf-8")):
        package = json.loads(Path(request).read_text(encoding="utf-8"))["package"]
        answer.main(request, out)
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
        vars(probes).clear()
        vars(probes).update(pristine)
        sys.path[:] = path
        os.chdir(cwd)
        importlib.invalidate_caches()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
