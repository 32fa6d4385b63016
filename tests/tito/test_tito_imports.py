"""tito's modules import in one direction (no cycles; the workspace never needs grading), and importing tito or
tinytorch changes nothing outside them (no environment variable)."""
import ast
import json
import os
import subprocess
import sys

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


def tito_imports() -> dict:
    "Each tito module -> the tito modules it imports anywhere in it (in functions too)."
    graph = {}
    for path in TITO.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tito":
                names = [f"tito.{alias.name}" for alias in node.names] if node.module == "tito" else [node.module]
                found.update(name for name in names if (TITO / f"{name.split('.')[1]}.py").is_file())
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("tito."))
        graph[f"tito.{path.stem}"] = found - {f"tito.{path.stem}"}
    return graph


def test_the_graph_reader_sees_imports_inside_functions():
    graph = tito_imports()
    assert "tito.grading" in graph["tito.workspace"], "imported inside init_student_workspace"
    assert "tito.cli" in graph["tito.milestone"], "imported under `if __name__ == '__main__'`"


def test_grading_finds_the_workspaces_paths_in_the_lowest_module():
    "Grading needs only the lowest modules: the workspace's paths (course), its sandbox, kernel, locks and feedback filter."
    graph = tito_imports()
    assert graph["tito.grading"] <= {"tito.course", "tito.sandbox", "tito.kernel", "tito.locking", "tito.hidden_tests"}
    assert graph["tito.course"] == set()


def test_no_import_cycle_among_titos_modules():
    graph, done, path = tito_imports(), set(), []

    def visit(module):
        assert module not in path, f"import cycle: {' -> '.join(path[path.index(module):] + [module])}"
        if module in done:
            return
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            visit(imported)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_the_workspace_imports_without_grading():
    loaded = json.loads(fresh_python("import json, sys, tito.workspace; print(json.dumps(sorted(sys.modules)))"))
    assert "tito.workspace" in loaded
    assert "tito.grading" not in loaded and "nbgrader" not in loaded and "tito.student" not in loaded


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
    assert changed_environ("tito", "tito.cli", "tito.milestone", "tito.workspace", "tito.grading") == {}


def test_importing_tinytorch_leaves_the_environment_unchanged():
    "Every module of the package (module 07's tinytorch.perf too, when it is there)."
    package = REPO / "tinytorch"
    modules = [".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
               for p in sorted(package.rglob("*.py"))]
    assert "tinytorch.core.tensor" in modules
    assert changed_environ(*modules) == {}


def test_the_environment_check_sees_a_module_that_sets_a_variable(tmp_path):
    (tmp_path / "sets_a_variable.py").write_text('import os\nos.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "26")\n')
    assert changed_environ("sets_a_variable", pythonpath=tmp_path) == {"OPENBLAS_THREAD_TIMEOUT": [None, "26"]}
