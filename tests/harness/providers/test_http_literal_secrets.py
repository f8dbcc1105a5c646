"""Issue 45: no value written out in a config reaches a file or the terminal, whatever its header or parameter is called.

A ``[models.http]`` table with literal values under twenty header names (among
them the ones a rule on names let through: ``Ocp-Apim-Subscription-Key``,
``X-Functions-Key``, ``X-Auth-Key``, ``Subscription-Key``, ``X-Key``, ``Key``,
``X-Credential``, ``X-Signature``), a password in its URL and a key in its query
string is refused by the real ``grace run``: exit 2, one line per value naming
its header and line and how to pass it from the environment, none of the values
printed. Written as the message says (``${VAR}``), the same run calls the fake
bot with every value, and not one of them is in any file of the run folder, the
response cache, the Parquet and Inspect exports, or what was printed.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from urllib.parse import quote

import pytest

from harness.core import secrets
from harness.core.literal_secrets import variable_for
from harness.testing.fake_api import FakeAPIServer, bot_answer
from tests.conftest import run_grace, sample_bench

N = 3
# header -> a value written out in the file; word values and short ones too: what a value is, not its shape, counts
HEADERS = {
    "Authorization": "Bearer lit-authz-5d1e7c0b9a2f4e8d",
    "Api-Key": "lit-apikey-3b9c1d7e2f",
    "X-Api-Key": "lit-xapikey-8e6f4a2c0d",
    "X-Auth-Token": "lit-xauthtoken-77aa01",
    "Cookie": "session=lit-cookie-6c2b9e0f41",
    "Ocp-Apim-Subscription-Key": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "X-Functions-Key": "lit-funckey-Zm9vYmFyYmF6cXV4==",
    "X-Auth-Key": "lit-cfauthkey-a1b2c3d4e5",
    "Subscription-Key": "lit-subkey-9f8e7d6c",
    "X-Key": "lit-xkey-42424242",
    "Key": "lit-barekey-13579",
    "X-Credential": "correct horse battery staple",
    "X-Signature": "lit-signature-0a0b0c0d",
    "Proxy-Authorization": "Basic bGl0LXByb3h5OnB3LTk5ODg=",
    "X-Amz-Security-Token": "lit-amz-sectoken-55aa66bb",
    "X-Goog-Api-Key": "lit-googkey-AIzaSyA1b2",
    "X-Client-Secret": "lit-clientsecret-00ff",
    "X-Session": "lit-session-c0ffee99",
    "X-Tenant-Pass": "lit-tenantpass-7b7b",
    "Private-Token": "lit-glpat-xxYYzz11",
}
# what a user needs to write out: standard headers, and one the table says is no secret
PLAIN = {"Accept": "application/json", "User-Agent": "grace-eval/1.0", "X-Request-Source": "grace"}
USER, PASSWORD, CODE = "botuser", "lit-url-password-31415", "lit-query-code-27182818"
SECRETS = [*HEADERS.values(), PASSWORD, CODE]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("literals"), N)


def board(tmp: Path, bot_url: str, headers: dict[str, str], url: str) -> Path:
    """Two bots: one sent the headers (one a line, so each problem names its own line), one whose URL holds a
    password and a key; the run exported to Parquet and Inspect."""
    lines = ["[run]", 'log_to = ["parquet", "inspect"]', "", "[export.parquet]", 'compression = "none"', "",
             "[export.inspect]", 'format = "json"', "", "[[models]]", 'spec = "http:bot"', "timeout = 5", "",
             "[models.http]", f"url = {json.dumps(bot_url)}", 'not_secret = ["X-Request-Source"]', "",
             "[models.http.headers]"]
    lines += [f"{json.dumps(name)} = {json.dumps(value)}" for name, value in {**headers, **PLAIN}.items()]
    lines += ["", "[[models]]", 'spec = "http:bot-by-url"', "timeout = 5", "", "[models.http]",
              f"url = {json.dumps(url)}", 'not_secret = ["channel"]']
    path = tmp / "board.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def forms(secret: str) -> set[str]:
    """A value as it travels (as is, URL-encoded, JSON-escaped), and its secret part alone (after ``Bearer ``,
    ``session=``)."""
    parts = {secret, secret.split(" ", 1)[-1], secret.split("=", 1)[-1] if secret.startswith("session=") else secret}
    return {f for p in parts for f in (p, quote(p, safe=""), json.dumps(p)[1:-1])}


def leaks(places: list[Path], printed: str) -> list[str]:
    """Every (value, place) where a written-out value is found: a file under ``places``, or the printed text."""
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # the URL's user:password as sent
    files = [p for folder in places for p in folder.rglob("*") if p.is_file()]
    found = []
    for form in {f for secret in [*SECRETS, basic] for f in forms(secret)}:
        found += [f"{form!r} printed"] if form in printed else []
        found += [f"{form!r} in {p}" for p in files if form.encode() in p.read_bytes()]
    return found


def test_written_out_secrets_are_refused_and_from_the_environment_reach_no_file(bench, tmp_path, monkeypatch):
    secrets.forget_all()
    cache = Path(os.environ["GRACE_CACHE_DIR"])
    with FakeAPIServer(responder=bot_answer) as srv:
        base = srv.bot_url.replace("http://", "")
        toml = board(tmp_path, srv.bot_url, HEADERS, f"http://{USER}:{PASSWORD}@{base}?code={CODE}&channel=eval")
        out = tmp_path / "refused"
        code, printed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                                  "--out", out)
        assert code == 2 and "Traceback" not in printed, printed
        assert srv.requests == []  # refused before any call
        text = toml.read_text(encoding="utf-8").splitlines()
        for name in HEADERS:  # each header named, at its own line, with the ${VAR} to write instead
            line = next(n for n, row in enumerate(text, 1) if row.startswith(json.dumps(name)))
            said = next((row for row in printed.splitlines() if f"header {name!r}" in row), "")
            assert f"{toml}:{line}: [[models]] #1: header {name!r} has its value written out" in said, (name, said)
            assert f"${{{variable_for(name)}}}" in said, said
        url_line = [n for n, row in enumerate(text, 1) if row.startswith("url =")][1]
        assert f"{toml}:{url_line}: [[models]] #2: http.url holds a password written out" in printed, printed
        assert "query parameter 'code' has its value written out" in printed and "code=${CODE}" in printed
        assert "'channel'" not in printed and not any(f"header {n!r}" in printed for n in PLAIN)
        assert leaks([out], printed) == []

        # written as the message says: every value from the environment
        for name, value in HEADERS.items():
            scheme = value.split(" ", 1)[0] + " " if value.startswith(("Bearer ", "Basic ")) else ""
            monkeypatch.setenv(variable_for(name), value[len(scheme):])
        monkeypatch.setenv("BOT_USER", USER)
        monkeypatch.setenv("BOT_PASSWORD", PASSWORD)
        monkeypatch.setenv("BOT_CODE", CODE)
        refs = {name: (value.split(" ", 1)[0] + " " if value.startswith(("Bearer ", "Basic ")) else "")
                + f"${{{variable_for(name)}}}" for name, value in HEADERS.items()}
        toml = board(tmp_path, srv.bot_url, refs,
                     f"http://${{BOT_USER}}:${{BOT_PASSWORD}}@{base}?code=${{BOT_CODE}}&channel=eval")
        out = tmp_path / "run"
        code, printed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                                  "--out", out)
        assert code == 0, printed
        sent = next(r for r in srv.requests if "x-key" in r.headers)
        assert {name: sent.headers[name.lower()] for name in HEADERS} == HEADERS  # the bot got every value
        assert sent.headers["x-request-source"] == "grace" and sent.headers["accept"] == "application/json"
        sent = next(r for r in srv.requests if "x-key" not in r.headers)
        assert sent.query == f"code={CODE}&channel=eval"
        assert sent.headers["authorization"] == "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert (out / "results.parquet").is_file() and any((out / "inspect").glob("*.json"))
    assert leaks([out, cache], printed) == []
    models = json.loads((out / "run.json").read_text(encoding="utf-8"))["models"]
    assert models[0]["options"]["http"]["headers"]["X-Functions-Key"] == "${X_FUNCTIONS_KEY}"
    assert models[0]["options"]["http"]["headers"]["X-Request-Source"] == "grace"  # declared no secret: as written
    assert models[1]["endpoint"] == f"http://${{BOT_USER}}:${{BOT_PASSWORD}}@{base}?code=${{BOT_CODE}}&channel=eval"
    secrets.forget_all()


def test_a_secret_in_a_base_url_or_an_option_is_refused_and_taken_from_the_environment(bench, tmp_path, monkeypatch):
    """Not only http: systems: any model's base_url and provider options follow the same rule."""
    secrets.forget_all()
    toml = tmp_path / "board.toml"
    toml.write_text('[[models]]\nspec = "openai:gpt-x"\nbase_url = "http://proxy:lit-proxy-pw-2718@127.0.0.1:9/v1"\n'
                    'options = { api_key = "lit-option-key-1618", json_mode = "auto" }\n', encoding="utf-8")
    code, printed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                              "--out", tmp_path / "refused")
    assert code == 2 and "Traceback" not in printed
    assert f"{toml}:3: [[models]] #1: base_url holds a password written out" in printed, printed
    assert f"{toml}:4: [[models]] #1: options.api_key has its value written out" in printed, printed
    assert "lit-proxy-pw-2718" not in printed and "lit-option-key-1618" not in printed

    with FakeAPIServer() as srv:  # a gateway whose key is part of its path
        base = srv.base_url
        monkeypatch.setenv("GATEWAY_KEY", "lit-gateway-key-2718281828")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-fake")
        toml.write_text(f'[[models]]\nspec = "openai:gpt-x"\nbase_url = "{base}/gw/${{GATEWAY_KEY}}/v1"\n'
                        'options = { json_mode = "auto" }\n', encoding="utf-8")
        code, printed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                                  "--out", tmp_path / "run")
        assert code == 0, printed
        assert srv.requests[0].path == "/gw/lit-gateway-key-2718281828/v1/chat/completions"
    assert "lit-gateway-key-2718281828" not in printed
    for path in [*(tmp_path / "run").rglob("*"), *Path(os.environ["GRACE_CACHE_DIR"]).rglob("*")]:
        assert not path.is_file() or b"lit-gateway-key-2718281828" not in path.read_bytes(), path
    model = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["models"][0]
    assert model["endpoint"] == f"{base}/gw/${{GATEWAY_KEY}}/v1"
    secrets.forget_all()


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("spec", ["openai:gpt-x", "anthropic:claude-x"])
def test_a_proxy_password_in_a_base_url_is_sent_as_basic_auth_on_either_transport(bench, tmp_path, monkeypatch,
                                                                                   transport, spec):
    """``https://user:${PW}@proxy/v1``: aiohttp refused the URL's credentials beside the SDK's own Authorization
    ("Cannot combine AUTHORIZATION header"), so every call failed on the default transport; httpx sent them as Basic
    in place of the key's Bearer header. Now both send what httpx did, and the password reaches no file."""
    secrets.forget_all()
    monkeypatch.setenv("GRACE_HTTP_TRANSPORT", transport)
    monkeypatch.setenv("PROXY_PW", "lit-proxy-pw-31415926535")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-fake")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-for-the-fake")
    with FakeAPIServer() as srv:
        base = srv.openai_base_url if spec.startswith("openai") else srv.anthropic_base_url
        scheme, _, rest = base.partition("://")
        toml = tmp_path / "board.toml"
        toml.write_text(f'[[models]]\nspec = "{spec}"\nbase_url = "{scheme}://proxy:${{PROXY_PW}}@{rest}"\n',
                        encoding="utf-8")
        code, printed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                                  "--out", tmp_path / "run", "--no-score")
        assert code == 0, printed
        sent = {r.headers.get("authorization") for r in srv.requests}
    pair = base64.b64encode(b"proxy:lit-proxy-pw-31415926535").decode()
    assert sent == {f"Basic {pair}"}
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows and all(r["error"] is None for r in rows)
    assert "lit-proxy-pw-31415926535" not in printed
    for path in (tmp_path / "run").rglob("*"):
        assert not path.is_file() or b"lit-proxy-pw-31415926535" not in path.read_bytes(), path
    secrets.forget_all()
