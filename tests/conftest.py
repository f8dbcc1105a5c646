"""Shared test helpers. Tests never touch the network: providers talk to harness.testing.fake_api."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
SAMPLE = ROOT / "benchmarks" / "sample"


def pytest_collection_modifyitems(config, items):
    """``browser``: the tests that drive Chromium, by the rule a browser test follows (its module is named
    ``*_browser.py``, or it takes the ``browser`` fixture), so no module has to remember the mark
    (``tests/source_tree/test_markers.py`` holds every user of ``tests.browser`` to the rule)."""
    for item in items:
        if item.path.name.endswith("_browser.py") or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    """Every test gets its own response cache and no real API keys or endpoints."""
    monkeypatch.setenv("GRACE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    from harness.providers import openai_chat

    openai_chat.forget_json_modes()  # a fake server's port can be reused by the next test's server
    from harness.core import secrets

    secrets.forget_all()  # each test starts as a fresh process: no key another test read is masked in its files


@pytest.fixture(autouse=True)
def _no_internet(monkeypatch):
    """Any connection to a non-loopback address fails the test: tests must never touch the internet."""
    import ipaddress
    import socket

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def allowed(address) -> bool:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host in ("localhost",) or not isinstance(host, str):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def guard(real):
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not allowed(address):
                raise ConnectionRefusedError(f"tests may not connect to {address!r} (network blocked in tests)")
            return real(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guard(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guard(real_connect_ex))


@pytest.fixture(scope="module")
def server():
    """One fake API server per test module: the provider tests make hundreds of calls to it."""
    from harness.testing.fake_api import FakeAPIServer

    with FakeAPIServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    """The module's fake server with nothing queued, no responder and no recorded requests."""
    server.clear()
    server.responder = None
    yield server
    server.clear()


@pytest.fixture()
def openai_server(monkeypatch):
    """The fake API server, answering each question by citing its first article, as the OpenAI endpoint."""
    from harness.testing.fake_api import FakeAPIServer, cite_first_id

    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        yield srv


@pytest.fixture()
def local_env(monkeypatch):
    """``local_env(srv)``: the OpenAI endpoint and key of a fake server the test starts itself (a self-hosted one)."""
    def use(srv):
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    return use


def run_grace(*args: str) -> tuple[int, str]:
    """Run the real ``grace`` entry point in-process; returns (exit code, stdout+stderr text)."""
    import contextlib
    import io

    from harness.cli.app import main

    buf = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, buf.getvalue()


BODY = "This policy explains the rules in detail so that an employee can act on it without asking anyone. " * 3
_QS = [("how many sick days do I get", "1"), ("how long is parental leave", "2"), ("where do I book flights", "3"),
       ("what is the per diem for meals", "4")]


def small_bench(root: Path, answerable: int, refusals: list[str]) -> Path:
    """A four-article handbook built into ``root/kb`` and a gold set in ``root/gold.csv``.

    Answerable questions cycle through the four articles (q0, q1, ...); refusals
    become r1, r2, ... with must_refuse true.
    """
    src = root / "src"
    write(src / "leave.md", f"# Leave\n\n## Sick leave\n\nTen days of paid sick leave per year. {BODY}\n\n"
          f"## Parental leave\n\nSixteen weeks of parental leave. {BODY}\n")
    write(src / "travel.md", f"# Travel\n\n## Booking\n\nBook flights in the travel portal. {BODY}\n\n"
          f"## Per diem\n\nThe meal per diem is 45 EUR a day. {BODY}\n")

    def build(kb: Path) -> None:
        code, out = run_grace("kb", "build", src, "--out", kb)
        assert code == 0, out

    built_kb("small", build, root / "kb")
    rows = ["question_id,question,expected_answer,expected_citations,must_refuse,notes"]
    rows += [f"q{i},{_QS[i % 4][0]} (variant {i}),,{_QS[i % 4][1]},false," for i in range(answerable)]
    rows += [f"r{i},{q},,,true," for i, q in enumerate(refusals, 1)]
    write(root / "gold.csv", "\n".join(rows) + "\n")
    return root


def sample_bench(root: Path, questions: int) -> Path:
    """The sample handbook's KB in ``root/kb`` and the first ``questions`` of its gold set in ``root/gold.csv``."""
    from harness.workflows.kb import build_kb

    built_kb("sample", lambda kb: build_kb(SAMPLE / "handbook", kb), root / "kb")
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines()
    write(root / "gold.csv", "\n".join(lines[:questions + 1]) + "\n")
    return root


_BUILT: dict[tuple[str, ...], Path] = {}


def built_kb(name: str, build, dest: Path) -> Path:
    """A copy at ``dest`` of the KB ``build`` writes, built once per test process: a build is deterministic (no path
    or clock in the articles or the index; the tokenizer variables are part of the key), so a test gets the same
    folder it would build, its own to change, for the cost of a copy."""
    import atexit
    import shutil
    import tempfile

    key = (name, os.environ.get("GRACE_TOKENIZER", ""), os.environ.get("GRACE_TIKTOKEN_ENCODING", ""))
    built = _BUILT.get(key)
    if built is None or not built.is_dir():
        home = Path(tempfile.mkdtemp(prefix=f"grace-test-{name}-"))
        atexit.register(shutil.rmtree, home, True)
        build(home / "kb")
        built = _BUILT[key] = home / "kb"
    shutil.copytree(built, dest)
    return dest


def shared(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} is absent (shared data set not available on this machine)")
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


os.environ.setdefault("COLUMNS", "200")


def killed_at_replace(target: str, *argv: object, env: dict[str, str] | None = None):
    """``grace ARGV`` in a process that SIGKILLs itself just before renaming a temp file over ``target``: a crash at
    the worst moment of a write, for the tests that a folder survives it."""
    import subprocess
    import sys

    code = (
        "import os, signal, sys\n"
        "real = os.replace\n"
        "def replace(src, dst, *a, **k):\n"
        f"    if str(dst).endswith({target!r}):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(src, dst, *a, **k)\n"
        "os.replace = replace\n"
        "from harness.cli.app import main\n"
        "main(sys.argv[1:])\n"
    )
    return subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
