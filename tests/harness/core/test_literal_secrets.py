"""The rule on secrets written out in a config, by value (harness.core.literal_secrets), case by case."""

from __future__ import annotations

import pytest

from harness.core import secrets
from harness.core.errors import GraceError
from harness.core.literal_secrets import (
    fill_env,
    header_problem,
    looks_like_key,
    option_problems,
    url_problems,
)


@pytest.mark.parametrize("name", ["Authorization", "Ocp-Apim-Subscription-Key", "X-Functions-Key", "X-Auth-Key",
                                  "Subscription-Key", "X-Key", "Key", "X-Credential", "X-Signature", "X-Team",
                                  "X-Whatever-Made-Up"])
def test_a_written_out_header_is_refused_whatever_its_name(name):
    for value in ("correct horse battery staple", "0123456789abcdef0123456789abcdef", "pw"):
        problem = header_problem(name, value, set())
        assert problem is not None and repr(name) in problem and "${" in problem and value not in problem


def test_a_header_from_the_environment_standard_headers_and_declared_ones_pass():
    assert header_problem("Ocp-Apim-Subscription-Key", "${APIM_KEY}", set()) is None
    assert header_problem("Authorization", "Bearer ${TOKEN}", set()) is None
    assert header_problem("Authorization", "SharedKey account:${SIG}", set()) is None
    for name in ("Accept", "content-type", "User-Agent", "Accept-Language"):
        assert header_problem(name, "application/json", set()) is None
    assert header_problem("X-Request-Source", "grace", {"x-request-source"}) is None
    # a key written beside the reference is still a key written out
    assert header_problem("Authorization", "Bearer sk0123456789abcdefghij ${X}", set()) is not None


def test_the_message_says_how_to_pass_it():
    problem = header_problem("X-Functions-Key", "abc", set())
    assert 'X-Functions-Key = "${X_FUNCTIONS_KEY}"' in problem and 'not_secret = ["X-Functions-Key"]' in problem
    problem = header_problem("Authorization", "Bearer abc123", set())
    assert 'Authorization = "Bearer ${AUTHORIZATION}"' in problem and "not_secret" not in problem


def test_a_key_is_known_by_its_shape():
    for key in ("sk-proj-4eC39HqLyjWDarjtT1zdp7dc", "0b5d7c8e1f2a4b3c9d8e7f6a5b4c3d2e", "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIzNDU2"):
        assert looks_like_key(key), key
    for text in ("0b5d7c8e-1f2a-4b3c-9d8e-7f6a5b4c3d2e", "gpt-4o-mini-2024-07-18", "Meta-Llama-3.1-8B-Instruct",
                 "application/json", "internationalization", "v1/chat/completions"):
        assert not looks_like_key(text), text


def test_a_url_credential_or_query_secret_is_refused_and_references_pass():
    assert url_problems("https://bot.example.com/v1/answer?api-version=2024-02-01", "url") == []
    assert url_problems("https://bot.example.com/ask?q={{question}}&code=${FUNC_KEY}", "url") == []
    assert url_problems("https://${BOT_USER}:${BOT_PASSWORD}@bot.example.com/", "url") == []
    assert url_problems("https://alice:${BOT_PASSWORD}@bot.example.com/", "url") == []
    (problem,) = url_problems("https://alice:hunter2@bot.example.com/", "base_url")
    assert "password" in problem and "hunter2" not in problem and "${PASSWORD_VAR}" in problem
    (problem,) = url_problems("https://bot.example.com/api?code=abc", "url")
    assert "'code'" in problem and "code=${CODE}" in problem and "abc" not in problem
    (problem,) = url_problems("https://bot.example.com/api?channel=eval", "url", set())
    assert 'not_secret = ["channel"]' in problem
    assert url_problems("https://bot.example.com/api?channel=eval", "url", {"channel"}) == []
    assert len(url_problems("https://sk0123456789abcdefghijkl@bot.example.com/", "url")) == 1  # a key as the user
    # a path part shaped like a key is masked, not refused: a gateway's account ID has that shape and is no secret
    webhook = "https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXX1234XXXX"
    assert url_problems(webhook, "url") == []
    secrets.forget_all()
    secrets.remember_uri(webhook)
    assert secrets.mask(f"posted to {webhook}") == "posted to https://hooks.example.com/services/T000/B000/***"
    secrets.forget_all()


def test_a_secret_option_is_refused_by_its_name_or_its_shape():
    problems = option_problems({"api_key": "short", "json_mode": "auto", "region": "eu-west-1",
                                "nested": {"value": "0b5d7c8e1f2a4b3c9d8e7f6a5b4c3d2e"}, "token": "${MY_TOKEN}"})
    assert [name for name, _ in problems] == ["api_key", "value"]
    assert 'api_key = "${API_KEY}"' in problems[0][1] and "options.nested.value" in problems[1][1]


def test_filling_a_url_encodes_its_credentials_and_remembers_them(monkeypatch):
    secrets.forget_all()
    monkeypatch.setenv("BOT_PW", "p@ss/w:rd+long")
    monkeypatch.setenv("BOT_CODE", "c0de+with/slash==")
    url = fill_env("https://bot:${BOT_PW}@h.example.com/${BOT_CODE}?code=${BOT_CODE}", "m: url", url=True)
    assert url == "https://bot:p%40ss%2Fw%3Ard%2Blong@h.example.com/c0de+with/slash==?code=c0de%2Bwith%2Fslash%3D%3D"
    assert secrets.mask(f"said {url}") == "said https://bot:***@h.example.com/***?code=***"
    monkeypatch.delenv("BOT_PW")
    with pytest.raises(GraceError, match=r"m: url needs \$\{BOT_PW\}; set the environment variable BOT_PW"):
        fill_env("https://bot:${BOT_PW}@h.example.com/", "m: url", url=True)
    secrets.forget_all()


def test_a_provider_calls_with_its_base_url_and_options_filled_and_the_run_keeps_the_references(monkeypatch):
    from harness.providers.base import ModelSpec, Provider

    class Plugin(Provider):
        provider_name = "plugin"

        async def complete(self, request):
            raise NotImplementedError

    secrets.forget_all()
    monkeypatch.setenv("GW_KEY", "gw-key-0123456789")
    monkeypatch.setenv("PLUGIN_SECRET", "plugin-secret-value")
    spec = ModelSpec("plugin", "m", base_url="https://gw.example.com/${GW_KEY}/v1",
                     options={"secret": "${PLUGIN_SECRET}", "depth": 3})
    provider = Plugin(spec)
    assert provider.spec.base_url == "https://gw.example.com/gw-key-0123456789/v1"
    assert provider.spec.options == {"secret": "plugin-secret-value", "depth": 3}
    assert spec.base_url == "https://gw.example.com/${GW_KEY}/v1" and spec.options["secret"] == "${PLUGIN_SECRET}"
    assert secrets.mask("plugin-secret-value and gw-key-0123456789") == "*** and ***"
    monkeypatch.delenv("PLUGIN_SECRET")
    with pytest.raises(GraceError, match=r"plugin:m: options.secret needs \$\{PLUGIN_SECRET\}"):
        Plugin(spec)
    secrets.forget_all()


def test_an_export_table_takes_its_credentials_from_the_environment():
    from harness.core.literal_secrets import LiteralSecrets
    from harness.exports.settings import export_settings

    with pytest.raises(LiteralSecrets) as info:
        export_settings("mlflow", {"tracking_uri": "https://alice:lit-pw-0001@mlflow.example.com",
                                   "experiment": "x"})
    assert "[export.mlflow]: tracking_uri holds a password written out" in str(info.value)
    assert "lit-pw-0001" not in str(info.value)
    with pytest.raises(LiteralSecrets, match=r"\[export.wandb\].api_key has its value written out"):
        export_settings("wandb", {"project": "p", "api_key": "lit-wandb-key"})
    assert export_settings("mlflow", {"tracking_uri": "https://alice:${MLFLOW_PW}@mlflow.example.com"}) == \
        ("https://alice:${MLFLOW_PW}@mlflow.example.com", {})
