"""Secrets grace expands or reads are masked in everything it writes or prints (harness.core.secrets).

Each case plants a key, has a real server echo it back (a 401/500 body that quotes
it, a bot that answers with its token), runs the real ``grace`` command and then
reads every file of the run folder, the shared response cache and what was printed:
the key, in any of the forms it travels in, is in none of them.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

import grace
from harness.core import secrets
from harness.testing.fake_api import FakeAPIServer, Reply, bot_answer
from tests.conftest import ROOT, SAMPLE, run_grace

KEY = "sk-planted-7f3a9c2e5b1d4f60"  # what a provider reads from its key variable
TOKEN = "tok-planted-0c9b8a7d6e5f"  # an http: bot's ${BOT_TOKEN}
N = 3


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("secrets")
    grace.build_kb(SAMPLE / "handbook", root / "kb")
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines()
    (root / "gold.csv").write_text("\n".join(lines[:N + 1]) + "\n", encoding="utf-8")
    return root


def forms(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), json.dumps(secret)[1:-1]]


def leaks(secret: str, out: Path, printed: str) -> list[str]:
    """Where ``secret`` (any of its forms) is found: a file of the run folder or the cache, or the printed text."""
    found = [f"printed: ...{printed[max(0, printed.find(secret) - 80):printed.find(secret) + 40]}..."] \
        if secret in printed else []
    places = [p for p in out.rglob("*") if p.is_file()]
    places += [p for p in Path(os.environ["GRACE_CACHE_DIR"]).rglob("*") if p.is_file()]
    for path in places:
        data = path.read_bytes()
        found += [f"{path.name}" for f in forms(secret) if f.encode() in data]
    return found


def board(tmp: Path, url: str, headers: str = 'X-Api-Key = "${BOT_TOKEN}"') -> Path:
    path = tmp / "board.toml"
    path.write_text("\n".join(["[[models]]", 'spec = "http:bot"', "timeout = 5", "", "[models.http]",
                               f"url = {json.dumps(url)}", f"headers = {{ {headers} }}"]) + "\n", encoding="utf-8")
    return path


def run_cli(bench: Path, out: Path, *args: object) -> tuple[int, str]:
    return run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", out, "--concurrency", "1",
                     "--max-attempts", "1", *args)


# --- the registry -------------------------------------------------------------------------------------------


def test_a_remembered_secret_is_masked_in_every_form_it_travels_in():
    secret = "p@ss word/with+signs-42"
    secrets.remember(secret)
    for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1], "p%40ss+word%2Fwith%2Bsigns-42"):
        assert secrets.mask(f"before {form} after") == "before *** after", form
    secrets.remember("abc")  # too short to be a key: masking it would garble every answer holding "abc"
    assert secrets.mask("abc abcdef") == "abc abcdef"
    secrets.remember_uri("https://alice:s3cr3t-pw@tracker.example.com/?api_key=qk-0123456789&x=1")
    basic = base64.b64encode(b"alice:s3cr3t-pw").decode()
    assert secrets.mask(f"pw s3cr3t-pw, basic {basic}, key qk-0123456789") == "pw ***, basic ***, key ***"
    # a URI's password is masked even when grace never read it
    message = "failed: http://bob:hunter22@10.0.0.1:5000/api"
    assert secrets.mask(message, uris=True) == "failed: http://bob:***@10.0.0.1:5000/api"
    assert secrets.mask(message) == message  # in data (a KB article's example URI) only what grace read is masked


def test_secret_variables_are_read_by_name_not_every_variable(monkeypatch):
    assert secrets.secret_variable("OPENAI_API_KEY") and secrets.secret_variable("HF_TOKEN")
    assert secrets.secret_variable("AWS_SECRET_ACCESS_KEY") and secrets.secret_variable("MLFLOW_TRACKING_PASSWORD")
    assert not secrets.secret_variable("HOME") and not secrets.secret_variable("AWS_SHARED_CREDENTIALS_FILE")
    monkeypatch.setenv("SOME_VENDOR_API_KEY", "vk-abcdefgh12345678")
    monkeypatch.setenv("SOME_SETTING", "plain-value-not-secret")
    secrets.remember_environment()
    assert secrets.mask("vk-abcdefgh12345678 plain-value-not-secret") == "*** plain-value-not-secret"


def test_a_provider_remembers_its_key_variables_whatever_their_names(monkeypatch):
    """A plugin's key variable need not be named like a secret: its ``key_envs`` are read when it is made, as are a
    base_url's password and key parameter."""
    from harness.providers.base import ModelSpec, Provider

    class Acme(Provider):  # what a plugin declares
        provider_name = "acme"
        key_envs = ["ACME_CRED"]

        async def complete(self, request):
            raise NotImplementedError

    monkeypatch.setenv("ACME_CRED", "acme-cred-5551234")
    Acme(ModelSpec("acme", "m", base_url="https://u:acme-pw-99887766@acme.example/v1?api-key=acme-q-11223344"))
    assert secrets.mask("acme-cred-5551234 acme-pw-99887766 acme-q-11223344") == "*** *** ***"


# --- http: systems ------------------------------------------------------------------------------------------


def test_an_http_bot_that_echoes_its_token_leaves_it_nowhere(bench, tmp_path, monkeypatch):
    """A bot answering with its own token: responses, report.html, run.json, the shared cache, the terminal."""
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(200)) as srv:
        code, printed = run_cli(bench, tmp_path / "run", "--config", board(tmp_path, srv.bot_url))
        assert srv.requests[0].headers["x-api-key"] == TOKEN  # the bot did get it, and said it back
    assert code == 0, printed
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows and all(r["response"].startswith("Your token is *** ") for r in rows)
    assert (tmp_path / "run" / "report.html").exists()
    assert leaks(TOKEN, tmp_path / "run", printed) == []


@pytest.mark.parametrize("status", [401, 500])
def test_an_http_error_body_quoting_the_token_leaves_it_nowhere(bench, tmp_path, monkeypatch, status):
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(status)) as srv:
        code, printed = run_cli(bench, tmp_path / "run", "--config", board(tmp_path, srv.bot_url))
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows[0]["error"] and "Incorrect API key provided: ***" in rows[0]["error"]["message"], rows[0]
    assert leaks(TOKEN, tmp_path / "run", printed) == [], printed


def test_the_python_api_hands_back_no_echoed_token(bench, tmp_path, monkeypatch):
    """grace.run() in a notebook: the reason a model was stopped (a 401 that quoted the token) is masked too."""
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(401)) as srv:
        result = grace.run(kb=bench / "kb", gold=bench / "gold.csv", models=[], out=tmp_path / "run",
                           config=board(tmp_path, srv.bot_url), concurrency=1)
    assert "Incorrect API key provided: ***" in result.stopped["http:bot"], result.stopped
    assert TOKEN not in repr(result.stopped)


def test_a_basic_auth_header_is_masked_encoded_and_decoded(bench, tmp_path, monkeypatch):
    pair = base64.b64encode(b"svc-user:basic-pw-31415926").decode()
    monkeypatch.setenv("BOT_BASIC", pair)

    def answer(body):
        return Reply.json({"answer": "I was sent svc-user:basic-pw-31415926 [ID: 1]"})

    with FakeAPIServer(responder=answer) as srv:
        code, printed = run_cli(bench, tmp_path / "run",
                                "--config", board(tmp_path, srv.bot_url, 'Authorization = "Basic ${BOT_BASIC}"'))
    assert code == 0, printed
    assert leaks("basic-pw-31415926", tmp_path / "run", printed) == []
    assert leaks(pair, tmp_path / "run", printed) == []


def test_a_header_value_with_a_line_break_is_refused_and_never_printed(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("BOT_TOKEN", TOKEN + "\r\nX-Injected: 1")
    with FakeAPIServer(responder=bot_answer) as srv:
        code, printed = run_cli(bench, tmp_path / "run", "--config", board(tmp_path, srv.bot_url))
        assert srv.requests == []  # refused before any call
    assert code == 2 and "BOT_TOKEN" in printed and "line break" in printed and "Traceback" not in printed, printed
    assert TOKEN not in printed and "X-Injected" not in printed
    written = board(tmp_path, "http://127.0.0.1:9/bot/answer", 'X-Api-Key = "a\\r\\nX-Injected: ${BOT_TOKEN}"')
    code, printed = run_cli(bench, tmp_path / "run2", "--config", written)
    assert code == 2 and "line break" in printed and "Traceback" not in printed, printed


def test_a_redirect_to_another_origin_is_an_error_row_and_sends_it_nothing(bench, tmp_path, monkeypatch):
    """httpx strips only Authorization on a cross-origin redirect; X-Api-Key would reach the other host."""
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    with FakeAPIServer(responder=bot_answer) as other, FakeAPIServer() as srv:
        srv.responder = lambda body: Reply.redirect(other.bot_url)
        code, printed = run_cli(bench, tmp_path / "run", "--config", board(tmp_path, srv.bot_url))
        assert other.requests == [], [r.headers for r in other.requests]
        port = other.base_url.rsplit(":", 1)[1]
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    error = rows[0]["error"]
    assert error["kind"] == "bad_response" and f"to another origin, http://127.0.0.1:{port};" in error["message"]
    assert "/bot/answer" not in error["message"] and len(rows) == N

    # the same origin (another path) is followed, headers and all
    with FakeAPIServer(responder=bot_answer) as srv:
        srv.enqueue(*[Reply.redirect(srv.base_url + "/v2/bot/answer")] * N)
        code, printed = run_cli(bench, tmp_path / "same", "--config", board(tmp_path, srv.bot_url))
        assert [r.path for r in srv.requests][:2] == ["/bot/answer", "/v2/bot/answer"]
        assert srv.requests[1].headers["x-api-key"] == TOKEN
    rows = [json.loads(line) for line in (tmp_path / "same" / "responses.jsonl").read_text().splitlines()]
    assert code == 0 and not any(r["error"] for r in rows), rows


# --- SDK providers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 500])
def test_an_openai_error_quoting_the_key_leaves_it_nowhere(bench, tmp_path, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(status)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, printed = run_cli(bench, tmp_path / "run", "--model", "openai:gpt-fake")
        assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows[0]["error"] and "***" in rows[0]["error"]["message"], rows[0]
    assert leaks(KEY, tmp_path / "run", printed) == [], printed


def test_an_openai_model_that_repeats_its_key_leaves_it_nowhere(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(200)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, printed = run_cli(bench, tmp_path / "run", "--model", "openai:gpt-fake")
    assert code == 0, printed
    assert (tmp_path / "run" / "report.html").exists()
    assert leaks(KEY, tmp_path / "run", printed) == []


@pytest.mark.parametrize("status", [200, 401, 500])
def test_a_litellm_error_or_answer_quoting_the_key_leaves_it_nowhere(bench, tmp_path, monkeypatch, status):
    """LiteLLM reads its key itself (here through api_key_env, a variable not named like a secret)."""
    if importlib.util.find_spec("litellm") is None:  # not imported here: grace's provider sets it up first
        pytest.skip("litellm is not installed")
    monkeypatch.setenv("MY_LLM", KEY)
    with FakeAPIServer(responder=lambda body: Reply.echo_key(status)) as srv:
        config = tmp_path / "board.toml"
        config.write_text(f'[[models]]\nspec = "litellm:openai/fake-1"\nbase_url = "{srv.openai_base_url}"\n'
                          'api_key_env = "MY_LLM"\n', encoding="utf-8")
        code, printed = run_cli(bench, tmp_path / "run", "--config", config)
        assert srv.requests and srv.requests[0].headers["authorization"] == f"Bearer {KEY}"
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows and "***" in (rows[0]["error"]["message"] if rows[0]["error"] else rows[0]["response"]), rows[0]
    assert leaks(KEY, tmp_path / "run", printed) == [], printed


# --- exports ------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_mlflow_export_never_prints_the_tracking_password(tmp_path):
    """A fresh process (MLflow's own log handlers are made inside it): stdout and stderr hold no password."""
    pytest.importorskip("mlflow")
    from tests.export_runs import build_sample_run

    run = build_sample_run(tmp_path / "sample")
    password = "mlflow-pw-27182818"
    uri = f"http://alice:{password}@127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": uri}
    done = subprocess.run([sys.executable, "-m", "harness.cli.app", "export", str(run), "--to", "mlflow"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "127.0.0.1" in done.stderr and "Traceback" not in done.stderr
    printed = done.stdout + done.stderr
    assert password not in printed and quote(password) not in printed, printed
    assert password not in (run / "exports.jsonl").read_text(encoding="utf-8")
