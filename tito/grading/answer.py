"""The answer process: the student's code answers the grader's probes, and nothing else happens here.

    python answer.py REQUEST OUT

Run by `tito.grading.sandbox.run_answer` in the sandbox (or, for the course's own answers and for a student's
`tito module complete`, outside it). It needs only the standard library, numpy and nbdev, and the files copied
beside it (`probes.py`, `nbdev_procs.py`): it never imports tito, which the sandbox cannot see.

REQUEST (JSON) says:
- `package`: the package's name (`tinytorch`); `modules`: the modules to import, whose names make the namespace `tt`;
- `library`: a folder holding the package as the student has it before this module (copied into `work`), or none;
- `notebook`: the submitted notebook, exported here with nbdev into `work` (whatever its `default_exp` says, nothing
  is written outside `work`: in the sandbox, nothing else is writable); or none, to import `path` as it is;
- `tapes`: one tape per graded cell (`tito.grading.probes`); `skip`: tapes not to run again;
- `strict`: the course's own answers, which also say which steps raised with no check looking (`probes.replay`).

For each tape, in order, it writes OUT/result-I.json (tito takes each away as it appears, and times the next tape
from then). OUT/status.json says how far the set-up got. Nothing the
student's code prints matters: the judge reads only these files, as data, with a size cap.
"""
import importlib
import json
import os
import shutil
import sys
import types
from pathlib import Path


def _write(path: Path, data):
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, path)


def _status(out: Path, stage: str, error: BaseException = None):
    data = {"stage": stage}
    if error is not None:
        import probes

        data["error"] = probes.raised_data(error)
    _write(out / "status.json", data)


def _export(notebook: Path, work: Path, package: str):
    "nbdev's export of the notebook into work/<package>, with the course's export processors."
    import nbdev_procs
    from nbdev.export import nb_export

    (work / "pyproject.toml").write_text(f'[tool.nbdev]\nlib_path = "{package}"\nnbs_path = "."\n', encoding="utf-8")
    os.chdir(work)
    nb_export(str(notebook), lib_path=package, procs=nbdev_procs.PROCS)


def main(request_path: str, out_dir: str) -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import probes  # before the student's package is on the path: nothing of theirs can stand in for it

    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    out = Path(out_dir)
    package = request["package"]
    root = Path(request["path"])
    try:
        if request.get("library") or request.get("notebook"):
            root.mkdir(parents=True, exist_ok=True)
            if request.get("library") and (Path(request["library"]) / package).is_dir():
                shutil.copytree(Path(request["library"]) / package, root / package, dirs_exist_ok=True)
            (root / package).mkdir(exist_ok=True)
        if request.get("notebook"):
            _export(Path(request["notebook"]).resolve(), root, package)
    except BaseException as error:  # noqa: BLE001 - a notebook nbdev cannot export is the student's answer
        _status(out, "export failed", error)
        return 0
    _status(out, "exported")
    sys.path.insert(0, str(root))
    namespace = {}
    for name in request["modules"]:
        try:
            module = importlib.import_module(name)
        except BaseException as error:  # noqa: BLE001
            _status(out, f"import of {name} failed", error)
            return 0
        namespace.update(vars(module))
    _status(out, "imported")
    tt = types.SimpleNamespace(**namespace)
    skip = set(request.get("skip", ()))
    for index, tape in enumerate(request["tapes"]):
        if index in skip:
            continue
        _write(out / f"result-{index}.json", probes.replay(tape, tt, strict=request.get("strict", False)))
    _status(out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
