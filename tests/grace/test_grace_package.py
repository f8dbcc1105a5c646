"""``import grace``: the Python API, one static package (``grace/``), every name imported by name.

A type checker sees the real signatures: mypy runs on a typed example and on wrong calls, which it must reject (a
misspelt run option, a wrong argument type), with grace installed as a wheel lays it out and from this checkout's
own editable install; the packaging config installs the folder as ``grace`` with its ``py.typed``.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path
from types import SimpleNamespace

import pytest

import grace
from tests.conftest import ROOT
from tests.grace.test_api import readme_example

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

PACKAGE = ROOT / "grace"
EXAMPLE = ROOT / "tests" / "data" / "typecheck" / "uses_the_api.py"


def test_every_name_is_imported_by_name():
    """Each name of ``grace.__all__`` is bound by ``from M import N as N`` in grace/__init__.py (what a type checker
    and an editor read), nothing is resolved at run time (no module ``__getattr__``), and a name a workflow module
    lists in its ``__all__`` but grace lacks is reported with the line to add."""
    import importlib

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    imported = {a.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
                for a in node.names if a.asname == a.name}
    assert not [n for n in tree.body if isinstance(n, ast.FunctionDef)], "grace/__init__.py defines no function"
    assert sorted(set(grace.__all__)) == sorted(grace.__all__), "a name listed twice in grace.__all__"
    assert set(grace.__all__) == set(imported), "grace.__all__ and the names imported differ"
    missing = []
    for path in sorted((ROOT / "harness" / "workflows").glob("[!_]*.py")):
        module = importlib.import_module(f"harness.workflows.{path.stem}")
        missing += [f"from {module.__name__} import {n} as {n}" for n in getattr(module, "__all__", ()) if n not in imported]
    assert missing == [], "add to grace/__init__.py (and to its __all__):\n" + "\n".join(missing)
    assert set(grace.__all__) <= set(dir(grace))
    with pytest.raises(AttributeError, match="no attribute 'rnu'"):
        _ = grace.rnu  # type: ignore[attr-defined]


def test_grace_testing_gives_the_test_doubles_a_user_is_taught(tmp_path):
    """``grace.testing``: the fake model API a plugin is tested against and the simulated panel of the
    prediction-powered how-to, as that page calls it (the sample KB and gold in place of ClapNQ's)."""
    import harness.testing
    import harness.testing.panel
    from grace.testing import FakeAPIServer, Reply, simulate_panel
    from tests.conftest import sample_bench

    assert FakeAPIServer is harness.testing.FakeAPIServer and Reply is harness.testing.Reply
    assert simulate_panel is harness.testing.panel.simulate_panel
    bench = sample_bench(tmp_path, 20)
    gold = grace.load_gold(bench / "gold.csv")
    rows = simulate_panel(grace.load_kb(bench / "kb"), gold.questions, [0.9, 0.5], seed=0)
    assert len(rows) == 2 * 20 and {r["question_id"] for r in rows} == {q.question_id for q in gold.questions}


def test_help_lists_the_api_and_runs_options():
    """``help(grace)`` lists the functions and types; ``help(grace.run)`` every run option, by name."""
    import inspect
    import pydoc

    from harness.runner.config import RunConfig

    text = pydoc.render_doc(grace, renderer=pydoc.plaintext)
    for name in ("run", "load_run", "search", "SystemAnswer", "Provider", "KB"):
        assert f"{name}(" in text or f"class {name}" in text, name
    keywords = set(inspect.signature(grace.run).parameters) - {"progress", "console"}
    assert keywords == set(RunConfig.model_fields), "grace.run's keywords are RunConfig's fields"
    # import_logs spells out ImportLogsConfig's fields, with the same defaults
    from harness.workflows.import_logs import ImportLogsConfig

    params = inspect.signature(grace.import_logs).parameters
    assert set(params) - {"console"} == set(ImportLogsConfig.model_fields)
    for name, field in ImportLogsConfig.model_fields.items():
        if not field.is_required():
            assert params[name].default == field.default, name


def test_the_packaging_installs_the_folder_as_grace_with_py_typed():
    """pyproject.toml's package finding, as setuptools does it: ``grace`` from the top-level folder, beside harness;
    each ships its ``py.typed`` (a wheel and ``pip install -e .`` both read this); package-dir "" = "." so an editable
    install is a plain path in a .pth file, which mypy follows (an import hook, it does not)."""
    setuptools = pytest.importorskip("setuptools", reason="setuptools is not installed: it is what finds the packages")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    find = dict(config["packages"]["find"])
    found = {p for w in find.pop("where") for p in setuptools.find_namespace_packages(str(ROOT / w), **find)}
    assert {"grace", "harness", "harness.workflows", "kb_builder", "annotations"} <= found
    assert not any(p.startswith(("tests", "benchmarks", "docs")) for p in found)
    assert config["package-dir"] == {"": "."}
    assert "py.typed" in config["package-data"]["grace"] and (PACKAGE / "py.typed").is_file()


def test_import_grace_works_where_grace_is_installed(tmp_path):
    """A fresh ``python -c "import grace; grace.run"`` finds it through the install, not through this test's path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def python(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)

    origin = python("import importlib.util as u; s = u.find_spec('grace'); print(s.origin if s else '')").stdout.strip()
    if not origin or Path(origin).resolve() != (PACKAGE / "__init__.py").resolve():
        pytest.skip(f"grace is not installed from this checkout ({origin or 'not installed'}): pip install -e . "
                    "(./dev does)")
    proc = python("import grace; print(grace.run.__module__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "harness.workflows.run"


# -- a type checker sees the API ----------------------------------------------------------------------------------
WRONG = '''\
import grace

grace.run(kb=3, gold="gold.csv", out="runs/first")
grace.load_run("runs/first").leaderboard.best_model
grace.score("responses.jsonl")
reveal_type(grace.run)
grace.run("kb", "gold.csv", ["baseline:top1"], out="runs/first", repeat=2)
grace.run("kb", "gold.csv", ["baseline:top1"], out="runs/first", k="3")
grace.run("kb", "gold.csv", ["baseline:top1"], repeats=2)
reveal_type(grace.search("kb", "how do I reset it?"))
reveal_type(grace.search("kb", ["one?", "two?"]))
reveal_type(grace.resolve_references("kb", "handbook.md#reset"))
'''


def mypy_on(files: list[Path], python: Path, cache: Path, cwd: Path) -> subprocess.CompletedProcess:
    """mypy as a user runs it on their own files: its defaults (an empty config), against ``python``'s packages."""
    (cwd / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")  # not a config found around
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(cwd / "mypy.ini"),
                           "--python-executable", str(python), "--cache-dir", str(cache),
                           "--no-error-summary", "--hide-error-context", *map(str, files)],
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def mypy(request, tmp_path_factory):
    """mypy as a user runs it on a script, with grace installed: a venv whose site-packages holds grace, harness,
    kb_builder and annotations as a wheel lays them out (copied from this checkout), so mypy reads their types only
    through their py.typed markers; other libraries are not there (Any to mypy). Kept under .pytest_cache with
    mypy's cache, so a second run checks only what changed."""
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[test]'")
    cache = getattr(request.config, "cache", None)
    base = cache.mkdir("mypy") if cache is not None else tmp_path_factory.mktemp("mypy")
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt", clear=True).create(base / "venv")
    python = next(p for p in [base / "venv" / "bin" / "python", base / "venv" / "Scripts" / "python.exe"] if p.exists())
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name, folder in [("grace", PACKAGE), ("harness", ROOT / "harness"), ("kb_builder", ROOT / "kb_builder"),
                         ("annotations", ROOT / "annotations")]:  # copies: mypy checks a linked file as a source
        shutil.copytree(folder, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path_factory.mktemp("scripts")
    return SimpleNamespace(check=lambda *files: mypy_on(list(files), python, base / "cache", work), work=work)


def test_a_typed_script_and_the_documented_example_pass_mypy(mypy):
    documented = mypy.work / "python_api_example.py"
    documented.write_text(readme_example(), encoding="utf-8")
    script = Path(shutil.copy(EXAMPLE, mypy.work))  # a user's folder: not inside grace's tree, which mypy would read
    proc = mypy.check(script, documented)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_rejects_wrong_calls_and_sees_runs_signature(mypy):
    """Not vacuous: a wrong type, a missing attribute, missing arguments, a misspelt run option, a run option of the
    wrong type and a missing ``out`` are each reported, on their lines; ``search`` and ``resolve_references`` return
    one result for one question and a list for a list."""
    wrong = mypy.work / "wrong.py"
    wrong.write_text(WRONG, encoding="utf-8")
    proc = mypy.check(wrong)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()

    def on(line: int, text: str) -> bool:
        return any(found.startswith(f"wrong.py:{line}:") and text in found for found in lines)

    assert on(3, 'Argument "kb" to "run" has incompatible type "int"'), proc.stdout
    assert on(4, '"Leaderboard" has no attribute "best_model"'), proc.stdout
    assert on(5, 'Missing positional arguments "gold", "kb"'), proc.stdout
    revealed = next(line for line in lines if line.startswith("wrong.py:6:"))
    assert "def (kb:" in revealed and "gold:" in revealed and "repeats:" in revealed and "RunResult" in revealed, revealed
    assert on(7, 'Unexpected keyword argument "repeat" for "run"'), proc.stdout
    assert on(8, 'Argument "k" to "run" has incompatible type "str"'), proc.stdout
    assert on(9, 'Missing named argument "out" for "run"'), proc.stdout
    hit, listed = "kb_builder.retrieval.Hit", r"(builtins\.)?list"  # mypy before 1.11 spells builtins.list
    assert re.search(rf'wrong.py:10: note: Revealed type is "{listed}\[{hit}\]"', proc.stdout), proc.stdout
    assert re.search(rf'wrong.py:11: note: Revealed type is "{listed}\[{listed}\[{hit}\]\]"', proc.stdout), proc.stdout
    assert on(12, 'Revealed type is "kb_builder.references.Resolution"'), proc.stdout


def test_mypy_finds_grace_in_the_dev_install(tmp_path, request):
    """``pip install -e .`` (what ./dev does) puts this checkout on the path with a plain .pth line, so mypy run on a
    user's file outside the checkout finds ``grace`` and its types (an import hook would leave it "Cannot find")."""
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[test]'")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    origin = subprocess.run([sys.executable, "-c", "import grace; print(grace.__file__)"], capture_output=True,
                            text=True, cwd=tmp_path, env=env).stdout.strip()
    if not origin or Path(origin).resolve() != (PACKAGE / "__init__.py").resolve():
        pytest.skip(f"grace is not installed from this checkout ({origin or 'not installed'}): pip install -e .")
    script = tmp_path / "mine.py"
    script.write_text('import grace\n\ngrace.run("kb", "gold.csv", out="runs/a", repeat=2)\n', encoding="utf-8")
    cache = request.config.cache.mkdir("mypy-dev") if getattr(request.config, "cache", None) else tmp_path / "c"
    proc = mypy_on([script], Path(sys.executable), cache, tmp_path)
    assert "Cannot find implementation" not in proc.stdout, proc.stdout
    assert proc.returncode == 1 and 'mine.py:3: error: Unexpected keyword argument "repeat" for "run"' in proc.stdout, \
        proc.stdout + proc.stderr
