"""``import grace``: the Python API imported by name (harness/grace), installed as the top-level package ``grace``.

A type checker sees the real signatures (mypy runs on a typed example and on a wrong one, which it must reject);
the names are ``import harness as grace``'s, the same objects; the packaging config installs the folder as
``grace`` with its ``py.typed``, and not a second time as ``harness.grace``.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness
from tests.conftest import ROOT, checkout_grace
from tests.harness.test_api import readme_example

PACKAGE = ROOT / "harness" / "grace"
EXAMPLE = ROOT / "tests" / "data" / "typecheck" / "uses_the_api.py"


def test_grace_is_import_harness_as_grace_by_name():
    """Every API name is imported by name in harness/grace/__init__.py (``from M import N as N``: what a type checker
    reads), a name a workflow adds reported with the line to add; same names, same order and same objects as
    ``import harness as grace``."""
    from harness.workflows import api_names

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    imported = {a.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for a in node.names if a.asname == a.name}
    names = api_names()
    missing = [f"from harness.workflows.{names[n]} import {n} as {n}" for n in names
               if imported.get(n) != f"harness.workflows.{names[n]}"]
    assert missing == [], "add to harness/grace/__init__.py (and to its __all__):\n" + "\n".join(missing)
    grace = checkout_grace()
    assert list(grace.__all__) == list(harness.__all__)
    assert grace.API_NAMES == harness.API_NAMES
    for name in grace.__all__:
        assert getattr(grace, name) is getattr(harness, name), name
    assert set(grace.__all__) <= set(dir(grace))
    with pytest.raises(AttributeError, match="no attribute 'rnu'"):
        _ = grace.rnu
    import inspect

    assert {"out", "repeats", "k"} <= set(inspect.signature(grace.run).parameters)  # help(grace.run): run options


def test_import_grace_leaves_numpy_to_the_names_that_need_it():
    """``import grace`` loads the workflows but not what they defer (numpy, the scorer: ``grace.Comparison``)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from tests.conftest import checkout_grace; "
            "g = checkout_grace(); print('numpy' in sys.modules); g.Comparison; print('numpy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.split() == ["False", "True"], proc.stderr


def test_the_packaging_installs_the_folder_as_grace_with_py_typed():
    """pyproject.toml's package finding, as setuptools does it: ``grace`` from harness/grace, never ``harness.grace``;
    its ``py.typed`` is package data (a wheel and ``pip install -e .`` both read this)."""
    setuptools = pytest.importorskip("setuptools", reason="setuptools is not installed: it is what finds the packages")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    find = dict(config["packages"]["find"])
    where = find.pop("where")
    found = {w: setuptools.find_namespace_packages(str(ROOT / w), **find) for w in where}  # pyproject: namespaces on
    assert "grace" in found["harness"] and not any("grace" in p for p in found["."])
    assert "harness" in found["."] and "harness.workflows" in found["."]
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
'''


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
        shutil.copytree(folder, site / name, ignore=shutil.ignore_patterns("__pycache__", "grace"))
    work = tmp_path_factory.mktemp("scripts")
    (work / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")  # mypy's defaults, not a config found around

    def check(*files: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(work / "mypy.ini"),
                               "--python-executable", str(python), "--cache-dir", str(base / "cache"),
                               "--no-error-summary", "--hide-error-context", *map(str, files)],
                              capture_output=True, text=True, cwd=work)

    return SimpleNamespace(check=check, work=work)


def test_a_typed_script_and_the_documented_example_pass_mypy(mypy):
    documented = mypy.work / "python_api_example.py"
    documented.write_text(readme_example(), encoding="utf-8")
    script = Path(shutil.copy(EXAMPLE, mypy.work))  # a user's folder: not inside grace's tree, which mypy would read
    proc = mypy.check(script, documented)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_rejects_wrong_calls_and_sees_runs_signature(mypy):
    """Not vacuous: a wrong type, a missing attribute and missing arguments are each reported, on their lines."""
    wrong = mypy.work / "wrong.py"
    wrong.write_text(WRONG, encoding="utf-8")
    proc = mypy.check(wrong)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("wrong.py:3:") and 'Argument "kb" to "run" has incompatible type "int"' in line
               for line in lines), proc.stdout
    assert any(line.startswith("wrong.py:4:") and '"Leaderboard" has no attribute "best_model"' in line
               for line in lines), proc.stdout
    assert any(line.startswith("wrong.py:5:") and 'Missing positional arguments "gold", "kb"' in line
               for line in lines), proc.stdout
    revealed = next(line for line in lines if line.startswith("wrong.py:6:"))
    assert "def (kb:" in revealed and "gold:" in revealed and "RunResult" in revealed, revealed
