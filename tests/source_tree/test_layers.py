"""No upward imports and no import circles: each stage of the data flow imports only the stages before it.

documents -> articles -> KB (kb_builder) -> prompts -> providers, run folder -> responses (runner) -> scores
(scoring) -> spot-check and reports; then the web apps (annotation tools, results viewer, KB curation); then the workflows
(harness.workflows: one function per command, the only place that drives several stages); then the Python API,
which only re-exports them; then the command lines, which parse arguments and print. A module that reached forward
(the scorer into the spot-check, the KB builder into the run folder) made every change to a later stage a change to
an earlier one.

What counts as an import: every ``import`` statement of a file, at module level, inside a function (grace defers
most imports to keep commands fast, and a deferred import is a dependency all the same) or under ``if
TYPE_CHECKING:`` (two files whose types name each other are read and changed together). One exception: a package's
``__init__`` loading or re-exporting a module of its own package (``kb_builder.documents`` loading its readers on
first use) is the package's front door, neither a circle with the module
that imports a name from it nor an upward import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

ORDER = [
    ("harness.core", "harness.__init__"),
    ("harness.stats",),  # the statistics every stage reports with (intervals, agreement): imports nothing of grace's
    ("harness.web",),  # the web apps' server core: needs only harness.core
    ("kb_builder",),
    ("harness.prompts", "harness.run_folder", "harness.privacy"),
    ("harness.providers",),
    ("harness.runner",),
    ("harness.scoring",),
    ("harness.spotcheck", "harness.reports"),
    ("annotations", "harness.viewer", "harness.kb_curate"),  # the web apps: gold labels, the results, KB curation
    ("harness.exports",),  # a scored run, out to the trackers: reads the run folder and its figures
    ("harness.workflows",),
    # the Python API, `import grace`: every public name imported by name; and the test doubles it offers users
    # (grace.testing: a fake model API, a simulated panel), which import nothing of grace's
    ("grace", "harness.testing"),
    ("harness.cli",),
]
OURS = ("grace", "harness", "kb_builder", "annotations")


def layer(module: str, order=ORDER) -> int:
    """The stage of ``module``: its longest listed prefix decides; the ``harness`` package itself is the root."""
    if module == "harness":
        module = "harness.__init__"
    best = (-1, -1)
    for i, names in enumerate(order):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best[1]:
                best = (i, len(name))
    assert best[0] >= 0, f"{module} is in no layer: add it to ORDER"
    return best[0]


def modules(root: Path, packages=OURS) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name (a package by its own name)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) for each of grace's modules that ``path`` imports, anywhere in the file: ``from a.b import c``
    is ``a.b.c`` when that is a module, else ``a.b``; relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            out += [(node.lineno, f"{base}.{a.name}" if f"{base}.{a.name}" in known else base) for a in node.names]
    return [(line, target) for line, target in out if target.split(".")[0] in OURS]


def graph(root: Path, packages=OURS) -> dict[str, list[tuple[int, str]]]:
    known = modules(root, packages)
    return {name: imports(name, path, known) for name, path in known.items()}


def upward_imports(deps: dict[str, list[tuple[int, str]]], order=ORDER) -> list[str]:
    return [f"{name}:{line} imports {target}" for name, targets in deps.items() for line, target in targets
            if layer(target, order) > layer(name, order) and not _front_door(name, target, deps)]


def circles(deps: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a loop (strongly connected components)."""
    edges = {name: sorted({t for _, t in targets if t in deps and t != name
                           and not _front_door(name, t, deps)}) for name, targets in deps.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def _front_door(name: str, target: str, deps) -> bool:
    """``name`` is a package's ``__init__`` and ``target`` a module inside that package."""
    return any(n == name + ".__init__" or n.startswith(name + ".") for n in deps) and target.startswith(name + ".")


def test_no_module_imports_a_later_stage():
    assert upward_imports(graph(ROOT)) == []


def test_no_two_files_import_each_other_even_round_a_loop():
    assert circles(graph(ROOT)) == []


def test_kb_builder_needs_only_the_core():
    """The KB builder is usable without the harness: it imports grace's shared core and its statistics, nothing
    else."""
    for name, targets in graph(ROOT).items():
        if name.startswith("kb_builder"):
            for line, target in targets:
                assert target.startswith(("kb_builder", "harness.core", "harness.stats")), f"{name}:{line}: {target}"


# -- the checks themselves fail when they should -----------------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


TINY = {"harness/__init__.py": "", "harness/core/__init__.py": "", "harness/scoring/__init__.py": "",
        "harness/scoring/metrics.py": "from harness.core import errors\n", "harness/core/errors.py": "",
        "harness/reports/__init__.py": "", "harness/reports/html.py": "from harness.scoring import metrics\n"}


def test_a_planted_upward_import_is_found(tmp_path):
    assert upward_imports(graph(_tree(tmp_path / "ok", TINY))) == []
    bad = _tree(tmp_path / "bad", {**TINY, "harness/core/errors.py": "def f():\n    from harness.reports.html import x\n"})
    assert upward_imports(graph(bad)) == ["harness.core.errors:2 imports harness.reports.html"]
    rel = _tree(tmp_path / "rel2", {**TINY, "harness/scoring/metrics.py": "from ..reports import html\n"})
    assert upward_imports(graph(rel)) == ["harness.scoring.metrics:1 imports harness.reports.html"]  # resolved


def test_a_planted_circle_is_found(tmp_path):
    assert circles(graph(_tree(tmp_path / "ok", TINY))) == []
    loop = {**TINY, "harness/scoring/votes.py": "from harness.scoring.metrics import a\n",
            "harness/scoring/metrics.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from harness.scoring.ranks import b\n",
            "harness/scoring/ranks.py": "def f():\n    from harness.scoring import votes\n"}
    assert circles(graph(_tree(tmp_path / "loop", loop))) == [
        ["harness.scoring.metrics", "harness.scoring.ranks", "harness.scoring.votes"]]
    # a package's __init__ loading its own modules is its front door, not a circle
    door = {**TINY, "harness/scoring/__init__.py": "def load():\n    from harness.scoring import metrics\n",
            "harness/scoring/metrics.py": "from harness.scoring import NAME\n"}
    assert circles(graph(_tree(tmp_path / "door", door))) == []
    # ...but one that imports a module outside it which imports it back is one
    door["harness/scoring/__init__.py"] += "def other():\n    from harness.core import errors\n"
    door["harness/core/errors.py"] = "from harness.scoring import NAME\n"
    assert circles(graph(_tree(tmp_path / "door2", door))) == [["harness.core.errors", "harness.scoring"]]
