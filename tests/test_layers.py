"""No upward imports: each stage of the data flow imports only the stages before it.

documents -> articles -> KB (kb_builder) -> prompts, providers, run folder -> responses (runner) -> scores
(scoring) -> spot-check and reports; then the annotation tools and the results viewer, then the orchestration (the API and the run
session) and the command lines, which may import anything. A module that reached forward (the scorer into
the spot-check, the KB builder into the run folder) made every change to a later stage a change to an
earlier one.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT

ORDER = [
    ("harness.core", "harness.__init__"),
    ("harness.web",),  # the web apps' server core: needs only harness.core
    ("kb_builder",),
    ("harness.prompts", "harness.providers", "harness.rundir", "harness.privacy"),
    ("harness.runner",),
    ("harness.scoring",),
    ("harness.spotcheck", "harness.reports"),
    ("annotations", "harness.viewer"),
    ("harness.api", "harness.runner.run_session"),
    ("harness.cli", "annotations.cli", "annotations.gold_cli", "harness.testing"),
]
OURS = ("harness", "kb_builder", "annotations")


def layer(module: str) -> int:
    """The stage of ``module``: its longest listed prefix decides; the ``harness`` package itself is the root."""
    if module == "harness":
        module = "harness.__init__"
    best = (-1, -1)
    for i, names in enumerate(ORDER):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best[1]:
                best = (i, len(name))
    assert best[0] >= 0, f"{module} is in no layer: add it to ORDER"
    return best[0]


def imports(path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(n, m) for n, m in out if m.split(".")[0] in OURS]


def test_no_module_imports_a_later_stage():
    upward = []
    for package in OURS:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__") if module != "harness.__init__" else module
            me = layer(module)
            for line, target in imports(path):
                if layer(target) > me:
                    upward.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}")
    assert upward == [], "\n".join(upward)


def test_kb_builder_needs_only_the_core():
    """The KB builder is usable without the harness: it imports grace's shared core and nothing else."""
    for path in (ROOT / "kb_builder").rglob("*.py"):
        for line, target in imports(path):
            assert target.startswith(("kb_builder", "harness.core")), f"{path.relative_to(ROOT)}:{line}: {target}"
