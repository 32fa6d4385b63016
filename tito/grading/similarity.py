"""`tito nbgrader similarity NN`: pairs of submissions whose exported code is more alike than a threshold, with the
matching regions side by side in one HTML page.

copydetect does the work: winnowing, as MOSS does, over Pygments tokens with names, strings and numbers
normalised, so renaming variables does not hide a copy. The release's own exported code (stubs and given code) is
copydetect's boilerplate: its fingerprints never count as a match, so a class does not match itself.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tito.notebooks import DIRECTIVE, directives
from tito.workspace import Module, TitoError, Workspace
from tito.grading.gradebook import collected

DEFAULT_THRESHOLD = 0.3
EXPORT_DIRECTIVES = {"export", "exports", "exporti"}  # nbdev's, as tito.exporting reads them


def exported_code(notebook: Path) -> str:
    "The code nbdev exports from `notebook`: its export cells, directive lines left out."
    nb = nbformat.read(notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and EXPORT_DIRECTIVES & directives(c.source).keys()]
    return "\n\n".join("\n".join(x for x in src.splitlines() if not DIRECTIVE.match(x)) for src in cells) + "\n"


@dataclass
class Pair:
    a: str
    b: str
    share_a: float  # the part of a's code found in b's
    share_b: float
    tokens: int  # tokens the two have in common
    code_a: str  # a's code as HTML, matching regions marked (copydetect's highlighting)
    code_b: str

    @property
    def share(self) -> float:
        return max(self.share_a, self.share_b)


def similar_pairs(ws: Workspace, mod: Module, threshold: float = DEFAULT_THRESHOLD) -> tuple[list[Pair], int]:
    """(pairs more alike than `threshold`, the most code in common first; how many submissions were compared). A pair
    is listed when either's code, the release's own code left out, has more than `threshold` of it in the other's."""
    from copydetect import CopyDetector

    if not 0 < threshold < 1:
        raise TitoError(f"--threshold is a share between 0 and 1 (e.g. 0.3), not {threshold}")
    release = ws.released(mod).notebook
    if not release.is_file():
        raise TitoError(f"no release of {mod.name} to tell given code from the students' own: "
                        f"`tito nbgrader generate {mod.number}` first")
    submitted = ws.setting_path("nbgrader", "submitted_dir", "submitted")
    notebooks = {s: submitted / s / mod.name / mod.notebook.name for s in collected(ws, mod)}
    notebooks = {s: nb for s, nb in notebooks.items() if nb.is_file()}
    if len(notebooks) < 2:
        raise TitoError(f"{mod.name}: {len(notebooks)} submission(s) collected; similarity needs two or more")
    with tempfile.TemporaryDirectory(prefix="tito-similarity-") as tmp:
        code, given = Path(tmp) / "code", Path(tmp) / "release"
        given.mkdir()
        (given / f"{mod.name}.py").write_text(exported_code(release), encoding="utf-8")
        owner = {}
        for sid, nb in notebooks.items():
            path = code / sid / f"{mod.name}.py"
            path.parent.mkdir(parents=True)
            try:
                path.write_text(exported_code(nb), encoding="utf-8")
            except (ValueError, OSError, nbformat.reader.NotJSONError):
                path.parent.rmdir()  # an unreadable notebook has no code to compare
                continue
            owner[str(path)] = sid
        detector = CopyDetector(test_dirs=[str(code)], ref_dirs=[str(code)], boilerplate_dirs=[str(given)],
                                extensions=["py"], display_t=threshold, autoopen=False, silent=True)
        detector.run()
        found = detector.get_copied_code_list()
    pairs = [Pair(owner[f1], owner[f2], float(s1), float(s2), int(n), h1, h2) for s1, s2, f1, f2, h1, h2, n in found]
    pairs.sort(key=lambda p: (-p.tokens, -p.share, p.a, p.b))  # as MOSS: the most code in common first
    return pairs, len(owner)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ module }}: similar submissions</title>
<style>
body { font-family: sans-serif; margin: 2em; }
table.pairs td, table.pairs th { padding: 0.2em 0.8em; text-align: left; }
.side { display: flex; gap: 1em; }
.side > div { flex: 1; min-width: 0; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 0.8em; }
.highlight-red { background: #f2b6b6; }
.highlight-green { background: #b6f2b6; }
</style></head><body>
<h1>{{ module }}: similar submissions</h1>
<p>{{ compared }} submissions compared with copydetect (winnowing, as MOSS); the release's own code (stubs and given
code) is left out. Pairs sharing more than {{ "%.0f"|format(threshold * 100) }}% of either's code, the most code in
common first.
A match is a reason to look, not a proof of copying.</p>
{% if pairs %}
<table class="pairs"><tr><th>#</th><th>student</th><th>student</th><th>of the first's code</th>
<th>of the second's code</th><th>tokens in common</th></tr>
{% for p in pairs %}<tr id="row-{{ loop.index }}"><td><a href="#pair-{{ loop.index }}">{{ loop.index }}</a></td>
<td class="a">{{ p.a }}</td><td class="b">{{ p.b }}</td><td>{{ "%.0f"|format(p.share_a * 100) }}%</td>
<td>{{ "%.0f"|format(p.share_b * 100) }}%</td><td>{{ p.tokens }}</td></tr>
{% endfor %}</table>
{% for p in pairs %}
<h2 id="pair-{{ loop.index }}">{{ loop.index }}. {{ p.a }} and {{ p.b }}</h2>
<div class="side"><div><h3>{{ p.a }} ({{ "%.0f"|format(p.share_a * 100) }}%)</h3><pre>{{ p.code_a|safe }}</pre></div>
<div><h3>{{ p.b }} ({{ "%.0f"|format(p.share_b * 100) }}%)</h3><pre>{{ p.code_b|safe }}</pre></div></div>
{% endfor %}
{% else %}<p>No pair of submissions is that alike.</p>{% endif %}
</body></html>
"""


def similarity_page(mod: Module, pairs: list[Pair], compared: int, threshold: float) -> str:
    "The HTML page: the pairs, then each pair's code side by side (one file, nothing loaded from elsewhere)."
    from jinja2 import Environment

    template = Environment(autoescape=True).from_string(PAGE)
    return template.render(module=mod.name, pairs=pairs, compared=compared, threshold=threshold)
