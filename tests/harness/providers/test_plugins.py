"""Provider plugins: packages that add a provider through the ``grace.providers`` entry-point group.

The plugin packages are real ones in ``tests/data/plugins``: an importable module and the ``*.dist-info`` metadata
``pip install`` would write (``entry_points.txt``). Putting that folder on ``sys.path`` (or ``PYTHONPATH`` for a
subprocess) is all it takes for importlib.metadata to find them, as it finds an installed package; nothing is
installed into the environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from harness.core.errors import GraceError
from harness.run_folder.run_dir import RunDir
from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import ROOT, SAMPLE, run_grace, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

PLUGINS = ROOT / "tests" / "data" / "plugins"


def _forget() -> None:
    from harness.providers import _CLASSES, plugins

    plugins.forget()
    for name in ("demo", "broken", "notaclass", "abstract"):
        _CLASSES.pop(name, None)


@pytest.fixture
def plugin_path(monkeypatch):
    """The demo plugins as if installed: their folder on sys.path, the registry made to read the metadata again."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    _forget()
    yield PLUGINS
    _forget()  # the next reading, in another test, comes after monkeypatch has taken the folder off sys.path
    for module in ("grace_plugin_demo", "grace_broken_demo"):
        sys.modules.pop(module, None)


@pytest.fixture(scope="module")
def sample_kb(tmp_path_factory):
    kb = tmp_path_factory.mktemp("sample") / "kb"
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", kb)
    assert code == 0, out
    return kb


def _subprocess_grace(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGINS), str(ROOT)]), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "harness.cli.app", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


# --- listing ------------------------------------------------------------------------------------------------------


def test_grace_providers_lists_plugins_with_their_package_and_reports_the_broken_one():
    """The real entry point in a fresh process, the plugins on PYTHONPATH as an installed package would be."""
    done = _subprocess_grace("providers")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "grace-plugin-demo 0.2.0" in lines["demo:"] and "httpx: installed" in lines["demo:"]
    assert "DEMO_API_KEY (not set)" in lines["demo:"]
    assert "grace-eval" in lines["openai:"] and "OPENAI_API_KEY" in lines["openai:"]
    assert "litellm:" in lines and "scripted:" not in lines  # an internal test model is not offered
    broken = next(line for line in out.splitlines() if line.startswith("broken"))
    assert "grace-broken-demo 0.1.0" in broken and "grace_broken_demo:BrokenProvider" in broken
    assert "ModuleNotFoundError: No module named 'grace_broken_demo_missing_dependency'" in broken
    shadowed = next(line for line in out.splitlines() if line.startswith("shadowed"))
    assert "openai: from grace-plugin-demo 0.2.0" in shadowed and "grace's built-in openai:" in shadowed
    assert "Traceback" not in done.stdout + done.stderr


def test_grace_providers_json(plugin_path, monkeypatch):
    monkeypatch.setenv("DEMO_API_KEY", "secret-demo-key")
    code, out = run_grace("providers", "--json")
    assert code == 0, out
    rows = json.loads(out)["providers"]
    by = {(r["name"], r["source"]): r for r in rows}
    demo = by["demo", "plugin"]
    assert (demo["package"], demo["version"], demo["target"]) == ("grace-plugin-demo", "0.2.0",
                                                                  "grace_plugin_demo:DemoProvider")
    assert demo["usable"] and demo["sdk_installed"] and demo["key_envs"] == ["DEMO_API_KEY"] and demo["key_set"]
    assert "secret-demo-key" not in out  # whether a key is set, never the key
    broken = by["broken", "plugin"]
    assert not broken["usable"] and "grace-broken-demo 0.1.0" in broken["error"]
    assert "No module named 'grace_broken_demo_missing_dependency'" in broken["error"]
    assert by["openai", "plugin"]["shadowed_by"] == "grace" and not by["openai", "plugin"]["usable"]
    assert by["openai", "built-in"]["package"] == "grace-eval" and by["openai", "built-in"]["usable"]
    assert by["baseline", "built-in"]["needs_network"] is False and by["baseline", "built-in"]["sdk"] is None


def test_help_never_reads_plugins_and_a_broken_one_does_not_break_it(plugin_path):
    from harness.providers import plugins

    code, out = run_grace("--help")
    assert code == 0 and "providers" in out
    assert plugins._FOUND is None  # the metadata was not even read
    done = _subprocess_grace("--help")
    assert done.returncode == 0 and "providers" in done.stdout and not done.stderr


# --- using a plugin -----------------------------------------------------------------------------------------------


def _cite_top_article(body) -> str:
    """Answer by citing the first article shown (the template's own ``[ID: <id>]`` example skipped): what
    baseline:top1 does, so the two must score the same."""
    ids = re.findall(r"\[ID:\s*([^\]\s<>]+)\s*\]", prompt_text(body))
    return f"That is covered in the handbook. [ID: {ids[0]}]"


def test_a_plugin_runs_end_to_end_on_the_sample_kb(plugin_path, sample_kb, tmp_path, monkeypatch):
    """grace run -m demo:MODEL: the plugin's class is found through the entry point, asked every question (here
    of an OpenAI-style fake server), cached, scored and reported like any provider (grace run scores and reports)."""
    monkeypatch.setenv("DEMO_API_KEY", "demo-key")
    with FakeAPIServer(responder=_cite_top_article) as srv:
        monkeypatch.setenv("DEMO_BASE_URL", srv.openai_base_url)
        args = ("run", "--kb", sample_kb, "--gold", SAMPLE / "gold.csv", "-m", "demo:fake-model", "-m", "baseline:top1",
                "--out", tmp_path / "run")
        code, out = run_grace(*args)
        assert code == 0, out
        asked = len(srv.requests)
        rows = [r for r in RunDir(tmp_path / "run").response_rows() if r["model"] == "demo:fake-model"]
        assert asked == len(rows) == 90 and not any(r["error"] for r in rows)
        assert all(r["input_tokens"] > 0 and r["finish_reason"] == "stop" for r in rows)  # the plugin's usage
        assert srv.requests[0].headers["authorization"] == "Bearer demo-key"
        assert srv.requests[0].body["model"] == "fake-model" and srv.requests[0].body["max_tokens"] == 1024
        # the same run again in a new folder: every answer from the cache, nothing sent
        code, out = run_grace(*args[:-1], tmp_path / "again")
        assert code == 0, out
        assert len(srv.requests) == asked
        assert all(r["cached"] for r in RunDir(tmp_path / "again").response_rows() if r["model"] == "demo:fake-model")
    models = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))["models"]
    demo, top1 = models["demo:fake-model"], models["baseline:top1"]
    assert demo["accuracy"] > 0.3 and demo["outcomes"] == top1["outcomes"]
    assert "demo:fake-model" in (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")
    # run.json says which package served the model, so a result can be traced to the plugin's version
    entries = {m["name"]: m for m in json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["models"]}
    assert entries["demo:fake-model"]["plugin"] == "grace-plugin-demo 0.2.0" and "plugin" not in entries["baseline:top1"]


def test_a_broken_plugin_fails_its_run_with_the_package_and_the_error(plugin_path, sample_kb, tmp_path):
    code, out = run_grace("run", "--kb", sample_kb, "--gold", SAMPLE / "gold.csv", "-m", "broken:x",
                          "--out", tmp_path / "run")
    assert code == 2, out
    assert "grace-broken-demo 0.1.0" in out and "grace_broken_demo:BrokenProvider" in out
    assert "ModuleNotFoundError: No module named 'grace_broken_demo_missing_dependency'" in out
    assert "pip uninstall grace-broken-demo" in out and "Traceback" not in out
    # other providers are unaffected by it
    code, out = run_grace("run", "--kb", sample_kb, "--gold", SAMPLE / "gold.csv", "-m", "baseline:top1",
                          "--out", tmp_path / "ok")
    assert code == 0, out


def test_a_plugin_without_its_key_fails_before_any_call(plugin_path, sample_kb, tmp_path, monkeypatch):
    monkeypatch.delenv("DEMO_API_KEY", raising=False)
    code, out = run_grace("run", "--kb", sample_kb, "--gold", SAMPLE / "gold.csv", "-m", "demo:m",
                          "--out", tmp_path / "run")
    assert code == 2 and "DEMO_API_KEY" in out and "Traceback" not in out


def test_a_built_in_name_always_wins(plugin_path):
    from harness.providers import parse_model_spec, provider_class
    from harness.providers.openai_chat import OpenAIChatProvider

    assert provider_class(parse_model_spec("openai:gpt-4o-mini")) is OpenAIChatProvider


def test_an_unknown_name_lists_the_plugins_too(plugin_path):
    from harness.providers import parse_model_spec

    with pytest.raises(GraceError) as exc:
        parse_model_spec("dmeo:m")
    assert "unknown provider 'dmeo'" in str(exc.value) and "from plugins: broken, demo" in str(exc.value)


def test_entries_that_are_not_providers_are_refused_by_name(tmp_path, monkeypatch):
    """An entry naming something that is not a Provider subclass, or one with complete() missing."""
    site = tmp_path / "site"
    write(site / "odd_plugin-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: odd-plugin\nVersion: 1.0\n")
    write(site / "odd_plugin-1.0.dist-info" / "entry_points.txt",
          "[grace.providers]\nnotaclass = json:dumps\nabstract = odd_plugin:Half\n")
    write(site / "odd_plugin.py", "from harness.providers.base import Provider\n\n\nclass Half(Provider):\n"
          "    provider_name = 'abstract'\n")
    monkeypatch.syspath_prepend(str(site))
    _forget()
    try:
        from harness.providers import make_provider, parse_model_spec

        with pytest.raises(GraceError, match=r"odd-plugin 1\.0 .*json:dumps.*not a subclass of .*Provider"):
            make_provider(parse_model_spec("notaclass:m"))
        with pytest.raises(GraceError, match="odd-plugin 1.0.*Half does not define complete"):
            make_provider(parse_model_spec("abstract:m"))
    finally:
        _forget()
        sys.modules.pop("odd_plugin", None)


def test_the_plugin_contract_is_importable_from_one_public_place():
    import harness.providers.base as base

    for name in ("Provider", "Request", "Completion", "ModelSpec", "ProviderError", "GraceError", "RequestContext"):
        assert name in base.__all__ and getattr(base, name) is not None
    doc = base.Provider.__doc__
    for word in ("provider_name", "complete", "check_ready", "endpoint", "aclose", "retryable", "key_envs"):
        assert word in doc, word


def _misbehaving_site(tmp_path):
    """Two installed plugins that misbehave at import: one calls sys.exit(9), one never finishes importing."""
    site = tmp_path / "site"
    for package, version, name, module, body in (
            ("grace-exit-demo", "1.0", "exits", "grace_exit_demo", "import sys\nsys.exit(9)\n"),
            ("grace-hang-demo", "2.0", "hangs", "grace_hang_demo", "import time\ntime.sleep(3600)\n")):
        info = site / f"{module}-{version}.dist-info"
        write(info / "METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        write(info / "entry_points.txt", f"[grace.providers]\n{name} = {module}:Provider\n")
        write(site / f"{module}.py", body)
    return site


def test_a_plugin_that_exits_or_hangs_at_import_is_listed_as_broken(tmp_path):
    site = _misbehaving_site(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(PLUGINS), str(ROOT)]), "GRACE_PLUGIN_IMPORT_TIMEOUT": "3"}
    done = subprocess.run([sys.executable, "-m", "harness.cli.app", "providers"], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=ROOT, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert "grace-plugin-demo 0.2.0" in lines["demo:"]  # the others are listed as ever
    exits = next(line for line in done.stdout.splitlines() if line.split()[:2] == ["broken", "exits:"])
    assert "grace-exit-demo 1.0" in exits and "sys.exit(9)" in exits, exits
    hangs = next(line for line in done.stdout.splitlines() if line.split()[:2] == ["broken", "hangs:"])
    assert "grace-hang-demo 2.0" in hangs and "did not finish within 3s" in hangs, hangs
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(("model", "words"), [
    ("exits:x", ["grace-exit-demo 1.0", "sys.exit(9)"]),
    ("hangs:x", ["grace-hang-demo 2.0", "did not finish within 3s"]),
])
def test_a_plugin_that_exits_or_hangs_at_import_fails_only_its_own_run(tmp_path, sample_kb, model, words):
    site = _misbehaving_site(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PLUGINS), str(ROOT)]),
           "GRACE_PLUGIN_IMPORT_TIMEOUT": "3"}
    done = subprocess.run([sys.executable, "-m", "harness.cli.app", "run", "--kb", str(sample_kb), "--gold",
                           str(SAMPLE / "gold.csv"), "-m", model, "-m", "baseline:top1", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out, (done.returncode, out)
    assert all(word in " ".join(out.split()) for word in words), out
    done = subprocess.run([sys.executable, "-m", "harness.cli.app", "run", "--kb", str(sample_kb), "--gold",
                           str(SAMPLE / "gold.csv"), "-m", "baseline:top1", "--out", str(tmp_path / "ok")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
