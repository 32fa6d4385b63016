"""tito's modules import in one direction (no cycles; the workspace never needs grading), and importing tito or
tinytorch changes nothing outside them (no environment variable)."""
import ast
import json
import os
import subprocess
import sys

from tito.cli import COMMANDS
from tito_helpers import REPO

TITO = REPO / "tito"


def fresh_python(code: str, *args: str, pythonpath=None) -> str:
    """Run `code` with `args` in a new interpreter (nothing imported yet) from the repository, without the thread
    variables that tests/conftest.py sets (so a module that sets one is seen); its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS", "OMP_", "MKL_", "TITO_"))}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _module_names() -> dict:
    "Each tito module's dotted name -> its file: tito/*.py, and the package tito/grading/ with its modules."
    files = {}
    for path in sorted(TITO.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        files[".".join(parts).removesuffix(".__init__")] = path
    return files


def tito_imports(top_level_only: bool = False) -> dict:
    """Each tito module (tito.x, tito.grading.y) -> the tito modules it imports anywhere in it (in functions too;
    with `top_level_only`, only the imports run when it is loaded)."""
    files = _module_names()

    def known(name: str):
        "`name` if it is a tito module; for `from tito.grading import judge`, tito.grading.judge."
        return name if name in files else None

    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in (tree.body if top_level_only else ast.walk(tree)):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from . import x, from .x import y
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] != "tito":
                    continue
                for alias in node.names:
                    target = known(f"{base}.{alias.name}") or known(base)
                    if target:
                        found.add(target)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("tito.") and known(a.name))
        graph[name] = found - {name}
    return graph


def test_the_graph_reader_sees_imports_inside_functions():
    graph = tito_imports()
    assert "tito.grading.generate" in graph["tito.student_workspace"], "imported inside init_student_workspace"
    assert "tito.exchange" in graph["tito.commands.fetch"], "imported inside the command"


def test_grading_finds_the_workspaces_paths_in_the_lowest_module():
    """Grading (the package tito.grading) needs only the lowest modules: the workspace's paths, the output helpers, locks
    and the notebook reader, and its own stages; no Jupyter kernel module any more (the answer process replaced it)."""
    graph = tito_imports()
    grading = {name: imported for name, imported in graph.items() if name.startswith("tito.grading")}
    assert {"tito.grading", "tito.grading.judge", "tito.grading.sandbox", "tito.grading.probes",
            "tito.grading.answer", "tito.grading.autograde"} <= grading.keys()
    for name, imported in grading.items():
        outside = {m for m in imported if not m.startswith("tito.grading")}
        assert outside <= {"tito.workspace", "tito.output", "tito.locking", "tito.notebooks", "tito.nbdev_procs"}, \
            (name, outside)
    assert "tito.kernel" not in graph and "tito.hidden_tests" not in graph and "tito.sandbox" not in graph
    assert graph["tito.workspace"] == set()


def test_the_answer_process_imports_nothing_of_tito():
    """answer.py and probes.py are copied into the sandbox, which cannot see tito: answer.py imports nothing of it,
    and probes.py only inside `checks()`, which runs in a student's notebook, never in the answer process."""
    graph = tito_imports()
    assert graph["tito.grading.answer"] == set()
    assert graph["tito.grading.probes"] <= {"tito.grading.notebook_checks"}
    tree = ast.parse((TITO / "grading" / "probes.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not [n for n in top if "tito" in ast.dump(n)], "probes.py imports tito when it is loaded"


def _package_as_one(graph: dict) -> dict:
    "The graph with tito.grading.* as one node, tito.grading (what tito.grading was before it became a package)."
    one = lambda m: "tito.grading" if m.startswith("tito.grading") else m
    out: dict = {}
    for name, imported in graph.items():
        out.setdefault(one(name), set()).update(one(m) for m in imported)
    return {name: imported - {name} for name, imported in out.items()}


def test_no_import_cycle_among_titos_modules():
    """Between tito's modules (the grading package counted as one), imports go one way, in functions too. Inside
    the package, the imports run at load time go one way; a few go back from inside functions (setup names
    JudgeCells and HideHiddenTests in nbgrader's config; probes' `checks` runs notebook_checks in a notebook)."""
    graph = _package_as_one(tito_imports())
    inner = {name: imported for name, imported in tito_imports(top_level_only=True).items()
             if name.startswith("tito.grading")}
    for g in (graph, inner):
        done, path = set(), []

        def visit(module):
            assert module not in path, f"import cycle: {' -> '.join(path[path.index(module):] + [module])}"
            if module in done:
                return
            path.append(module)
            for imported in sorted(g.get(module, ())):
                visit(imported)
            path.pop()
            done.add(module)

        for module in sorted(g):
            visit(module)


def test_the_workspace_imports_without_grading():
    loaded = json.loads(fresh_python("import json, sys, tito.student_workspace; print(json.dumps(sorted(sys.modules)))"))
    assert "tito.student_workspace" in loaded
    assert "tito.grading" not in loaded and "nbgrader" not in loaded and "tito.commands" not in loaded


IMPORTS_LEAVE_ENVIRON = """
import json, os, sys
before = dict(os.environ)
for name in sys.argv[1:]:
    __import__(name)
after = dict(os.environ)
print(json.dumps({k: [before.get(k), after.get(k)] for k in before.keys() | after.keys() if before.get(k) != after.get(k)}))
"""


def changed_environ(*modules: str, pythonpath=None) -> dict:
    "Variables that importing `modules` in a fresh interpreter changed: name -> [before, after]."
    return json.loads(fresh_python(IMPORTS_LEAVE_ENVIRON, *modules, pythonpath=pythonpath))


def test_importing_tito_leaves_the_environment_unchanged():
    commands = [f"tito.commands.{name}" for name in COMMANDS]
    assert changed_environ("tito", "tito.cli", *commands, "tito.milestone", "tito.student_workspace", "tito.grading") == {}


def test_importing_tinytorch_leaves_the_environment_unchanged():
    "Every module of the package (tinytorch.perf too, when it is there)."
    package = REPO / "tinytorch"
    modules = [".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
               for p in sorted(package.rglob("*.py"))]
    assert "tinytorch.core.tensor" in modules
    assert changed_environ(*modules) == {}


def test_the_environment_check_sees_a_module_that_sets_a_variable(tmp_path):
    (tmp_path / "sets_a_variable.py").write_text('import os\nos.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "26")\n')
    assert changed_environ("sets_a_variable", pythonpath=tmp_path) == {"OPENBLAS_THREAD_TIMEOUT": [None, "26"]}
