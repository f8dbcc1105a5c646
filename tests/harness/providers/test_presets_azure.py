"""Named OpenAI-compatible services (``openrouter:``, ``ollama:``...) and Azure OpenAI (``azure:DEPLOYMENT``),
each with the real openai SDK against the local fake API server."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import types

import pytest

from harness.core.errors import GraceError
from harness.providers import PROVIDERS, endpoint_of, make_provider, parse_model_spec
from harness.providers.azure_openai import DEFAULT_API_VERSION, ENTRA_SCOPE
from harness.providers.base import Completion, ModelSpec, ProviderError, Request
from harness.providers.presets import PLACEHOLDER_KEY, PRESETS
from harness.testing import FakeAPIServer, Reply, cite_first_id
from harness.testing.api_formats import route
from harness.testing.fake_api import LocalServer
from tests.conftest import run_grace, small_bench, write

# name: (documented base URL, key variable, key required)
EXPECTED = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", True),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY", True),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY", True),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY", True),
    "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY", True),
    "ollama": ("http://127.0.0.1:11434/v1", "OLLAMA_API_KEY", False),
    "vllm": ("http://127.0.0.1:8000/v1", "VLLM_API_KEY", False),
    "llamacpp": ("http://127.0.0.1:8080/v1", "LLAMA_API_KEY", False),
}
HOSTED = [name for name, (_, _, hosted) in EXPECTED.items() if hosted]
LOCAL = [name for name, (_, _, hosted) in EXPECTED.items() if not hosted]
AZURE_VARS = ["AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "OPENAI_API_VERSION"]
MESSAGES = [{"role": "user", "content": "Where is the office? [ID: 17] The office is in Oslo."}]
SCHEMA = {"title": "answer", "type": "object", "properties": {"answer": {"type": "string"}}}
AZURE_REJECTS_SCHEMA = "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """No service's real key or URL from this machine leaks into a test."""
    for name, (_, key_env, _) in EXPECTED.items():
        monkeypatch.delenv(key_env, raising=False)
        monkeypatch.delenv(f"{name.upper()}_BASE_URL", raising=False)
    for var in AZURE_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 4, ["what is the capital of france"])


def call(spec: ModelSpec, request: Request | None = None) -> tuple[Completion, object]:
    """One call through a ready provider; returns the completion and the provider (for what it learned)."""
    provider = make_provider(spec)

    async def go() -> Completion:
        provider.check_ready()
        try:
            return await provider.complete(request or Request(messages=MESSAGES))
        finally:
            await provider.aclose()

    return asyncio.run(go()), provider


def azure_spec(srv: FakeAPIServer, deployment: str = "gpt-4o-mini-prod", **kw) -> ModelSpec:
    kw.setdefault("api_key", "az-key")
    kw.setdefault("timeout_s", 5.0)
    return ModelSpec("azure", deployment, base_url=srv.base_url, **kw)


def rows_of(run_dir):
    return [json.loads(x) for x in (run_dir / "responses.jsonl").read_text().splitlines()]


# --- presets: resolution ---------------------------------------------------------------------------------------
def test_every_preset_is_registered_with_its_documented_url_and_key_variable():
    assert set(PRESETS) == set(EXPECTED)
    for name, (url, key_env, hosted) in EXPECTED.items():
        assert PROVIDERS[name] == f"harness.providers.presets:{name}"
        provider = make_provider(parse_model_spec(f"{name}:some/model:tag"))
        assert provider.spec.model == "some/model:tag"  # only the first colon separates the provider
        assert type(provider).endpoint(provider.spec) == url
        assert provider._key_envs() == [key_env] and PRESETS[name].hosted is hosted


@pytest.mark.parametrize("name", HOSTED)
def test_a_hosted_preset_without_its_key_names_the_variable(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # another service's key is not used instead
    with pytest.raises(GraceError, match=EXPECTED[name][1]):
        make_provider(parse_model_spec(f"{name}:m")).check_ready()


@pytest.mark.parametrize("name", LOCAL)
def test_a_local_preset_without_a_key_sends_a_placeholder(name, srv, monkeypatch):
    monkeypatch.setenv(f"{name.upper()}_BASE_URL", srv.openai_base_url)
    done, _ = call(parse_model_spec(f"{name}:qwen2.5:0.5b"))
    assert done.text == "OK"
    (req,) = srv.requests
    assert req.path == "/v1/chat/completions" and req.body["model"] == "qwen2.5:0.5b"
    assert req.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_preset_sends_its_own_key_and_max_tokens(name, srv, monkeypatch):
    monkeypatch.setenv(EXPECTED[name][1], f"{name}-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the openai provider's variable: not read
    call(ModelSpec(name, "m", base_url=srv.openai_base_url, params={"max_tokens": 40}, timeout_s=5))
    (req,) = srv.requests
    assert req.headers["authorization"] == f"Bearer {name}-key"
    assert req.body["max_tokens"] == 40 and "max_completion_tokens" not in req.body


def test_base_url_wins_over_the_preset_variable_which_wins_over_the_default(monkeypatch):
    spec = parse_model_spec("groq:llama-3.1-8b-instant")
    cls = type(make_provider(spec))
    assert cls.endpoint(spec) == "https://api.groq.com/openai/v1"
    monkeypatch.setenv("GROQ_BASE_URL", "https://gateway.example/groq/v1")
    assert cls.endpoint(spec) == "https://gateway.example/groq/v1"
    spec.base_url = "https://proxy.example/v1"
    assert cls.endpoint(spec) == "https://proxy.example/v1"


def test_api_key_env_replaces_the_presets_variable(srv, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", "team-secret")
    monkeypatch.setenv("OPENROUTER_API_KEY", "personal")
    call(ModelSpec("openrouter", "m", base_url=srv.openai_base_url, api_key_env="TEAM_KEY", timeout_s=5))
    assert srv.requests[0].headers["authorization"] == "Bearer team-secret"
    # a variable named in the config but unset is a mistake, even where no key is needed
    with pytest.raises(GraceError, match="MY_VLLM_KEY"):
        make_provider(ModelSpec("vllm", "m", api_key_env="MY_VLLM_KEY")).check_ready()


def test_local_presets_get_the_self_hosted_timeout_and_hosted_ones_the_default():
    for name in EXPECTED:
        provider = make_provider(parse_model_spec(f"{name}:m"))
        assert provider.timeout_s == (60 if name in HOSTED else 300), name


def test_two_services_never_share_an_endpoint():
    specs = [parse_model_spec(f"{name}:m") for name in EXPECTED] + [parse_model_spec("openai:m")]
    endpoints = [endpoint_of(s) for s in specs]
    assert len(set(endpoints)) == len(specs)


def test_only_a_local_preset_is_probed_for_slots(monkeypatch):
    with FakeAPIServer(local=LocalServer(slots=3, props=True)) as local:
        monkeypatch.setenv("LLAMACPP_BASE_URL", local.openai_base_url)
        assert asyncio.run(make_provider(parse_model_spec("llamacpp:m")).parallel_slots()) == 3
        monkeypatch.setenv("OPENROUTER_BASE_URL", local.openai_base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "k")
        local.gets.clear()
        assert asyncio.run(make_provider(parse_model_spec("openrouter:m")).parallel_slots()) is None
        assert local.gets == []


# --- presets: end to end ---------------------------------------------------------------------------------------
def test_grace_run_with_a_preset_pointed_at_the_server_by_its_variable(bench, monkeypatch):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENROUTER_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--no-score",
                              "--model", "openrouter:meta-llama/llama-3.1-8b-instruct", "--out", bench / "run")
        assert code == 0, out
        rows = rows_of(bench / "run")
        assert len(rows) == 5 and not any(r["error"] for r in rows)
        assert {r.headers["authorization"] for r in srv.requests} == {"Bearer or-key"}
        assert {r.body["model"] for r in srv.requests} == {"meta-llama/llama-3.1-8b-instruct"}
        (entry,) = json.loads((bench / "run" / "run.json").read_text())["models"]
        assert entry["provider"] == "openrouter" and entry["endpoint"].startswith(srv.base_url)


def test_grace_run_with_a_hosted_preset_and_no_key_says_which_variable(bench):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--no-score",
                          "--model", "together:meta-llama/Llama-3-8b-chat-hf", "--out", bench / "run")
    assert code != 0 and "TOGETHER_API_KEY" in out


def test_a_local_preset_keeps_the_json_mode_fallback(bench, monkeypatch):
    def answer(body):
        return json.dumps({"answer": "See there.", "citation": cite_first_id(body).rpartition("[ID: ")[2].rstrip("]")})

    with FakeAPIServer(responder=answer, local=LocalServer(slots=2)) as srv:
        monkeypatch.setenv("OLLAMA_BASE_URL", srv.openai_base_url)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--no-score", "--output-mode",
                              "json", "--model", "ollama:llama3.1:8b", "--out", bench / "run")
        assert code == 0, out
        # llama.cpp's form: the schema beside json_object
        assert srv.rejected == 1 and {r["json_mode"] for r in rows_of(bench / "run")} == {"json_object_schema"}


# --- azure -----------------------------------------------------------------------------------------------------
def test_the_fake_server_answers_azure_paths_in_the_openai_format():
    assert route("/openai/deployments/gpt-4o-mini-prod/chat/completions") == "openai"


def test_azure_request_has_deployment_path_api_version_and_api_key(srv):
    srv.enqueue(Reply.ok("It is in Oslo. [ID: 17]", input_tokens=20, output_tokens=6))
    done, _ = call(azure_spec(srv, params={"max_tokens": 64, "temperature": 0}))
    assert (done.text, done.input_tokens, done.output_tokens) == ("It is in Oslo. [ID: 17]", 20, 6)
    (req,) = srv.requests
    assert req.path == "/openai/deployments/gpt-4o-mini-prod/chat/completions"
    assert req.query == f"api-version={DEFAULT_API_VERSION}"
    assert req.headers["api-key"] == "az-key" and "authorization" not in req.headers
    # reasoning deployments reject max_tokens; every api-version since 2024-09-01 takes the newer name
    assert req.body["max_completion_tokens"] == 64 and "max_tokens" not in req.body


def test_azure_reads_its_documented_variables(srv, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", srv.base_url)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    spec = parse_model_spec("azure:o3-mini")
    assert endpoint_of(spec).startswith(srv.base_url)
    call(spec)
    (req,) = srv.requests
    assert (req.query, req.headers["api-key"]) == ("api-version=2025-01-01-preview", "env-key")


def test_azure_api_version_option_wins_and_old_versions_keep_max_tokens(srv, monkeypatch):
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    call(azure_spec(srv, options={"api_version": "2024-06-01"}, params={"max_tokens": 10}))
    (req,) = srv.requests
    assert req.query == "api-version=2024-06-01" and req.body["max_tokens"] == 10


def test_azure_entra_id_token_from_the_environment(srv, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "entra-token")
    call(azure_spec(srv, api_key=None))
    (req,) = srv.requests
    assert req.headers["authorization"] == "Bearer entra-token" and "api-key" not in req.headers


def test_azure_default_credential_when_azure_identity_is_installed(srv, monkeypatch):
    scopes = []

    def get_bearer_token_provider(credential, scope):
        scopes.append(scope)
        return lambda: "fresh-token"

    fake = types.ModuleType("azure.identity")
    fake.DefaultAzureCredential = object  # type: ignore[attr-defined]
    fake.get_bearer_token_provider = get_bearer_token_provider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "azure", types.ModuleType("azure"))
    monkeypatch.setitem(sys.modules, "azure.identity", fake)
    call(azure_spec(srv, api_key=None))
    assert scopes == [ENTRA_SCOPE] and srv.requests[0].headers["authorization"] == "Bearer fresh-token"


def test_azure_without_credentials_or_endpoint_says_what_to_set(srv, monkeypatch):
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # not installed
    with pytest.raises(GraceError, match="AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN.*azure-identity"):
        make_provider(azure_spec(srv, api_key=None)).check_ready()
    with pytest.raises(GraceError, match="AZURE_OPENAI_ENDPOINT"):
        make_provider(ModelSpec("azure", "d", api_key="k")).check_ready()
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "t")  # a named key variable is not silently replaced by a token
    with pytest.raises(GraceError, match="TEAM_AZURE_KEY"):
        make_provider(azure_spec(srv, api_key=None, api_key_env="TEAM_AZURE_KEY")).check_ready()


def test_azure_rate_limit_is_retried_after_the_servers_delay(bench, monkeypatch):
    write(bench / "one.csv", "question_id,question,expected_citations,must_refuse\nq1,how many sick days,1,false\n")
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", srv.base_url)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-key")
        srv.enqueue(Reply.rate_limit(retry_after=30, ms=300))  # Azure sends both; the finer one wins
        t0 = time.monotonic()
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "one.csv", "--model", "azure:gpt-4o-mini",
                              "--out", bench / "run", "--no-score")
        waited = time.monotonic() - t0
        assert code == 0, out
        (row,) = rows_of(bench / "run")
        assert row["attempts"] == 2 and row["error"] is None and row["response"]
        assert len(srv.requests) == 2 and 0.3 <= waited < 30
        assert {r.path for r in srv.requests} == {"/openai/deployments/gpt-4o-mini/chat/completions"}


def test_azure_json_mode_falls_back_when_the_api_version_rejects_the_schema(srv):
    srv.responder = lambda body: (Reply.error(400, AZURE_REJECTS_SCHEMA)
                                  if body.get("response_format", {}).get("type") == "json_schema" else '{"answer": "Oslo"}')
    spec = azure_spec(srv, deployment="gpt-4o-legacy", options={"api_version": "2024-06-01"})
    done, provider = call(spec, Request(messages=MESSAGES, output_mode="json", json_schema=SCHEMA))
    assert done.text == '{"answer": "Oslo"}' and done.json_mode == "json_object"
    assert [r.body["response_format"]["type"] for r in srv.requests] == ["json_schema", "json_object"]
    assert provider.learned()["json_mode"] == "json_object"


def test_azure_unknown_deployment_stops_the_model(srv):
    body = {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}}
    srv.enqueue(Reply(status=404, raw_body=json.dumps(body).encode()))
    with pytest.raises(ProviderError) as info:
        call(azure_spec(srv, deployment="nope"))
    assert (info.value.kind, info.value.retryable) == ("unknown_model", False)


# --- a leaderboard mixing both -----------------------------------------------------------------------------------
def test_a_leaderboard_mixing_azure_and_a_preset(bench, monkeypatch, tmp_path):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("TEAM_AZURE_KEY", "az-team")
        board = write(tmp_path / "board.toml", f"""
[run]
max_tokens = 200

[[models]]
spec = "azure:gpt-4o-mini-prod"
name = "azure-4o-mini"
base_url = "{srv.base_url}"
api_key_env = "TEAM_AZURE_KEY"
options = {{api_version = "2025-01-01-preview"}}

[[models]]
spec = "vllm:Qwen/Qwen2.5-7B-Instruct"
base_url = "{srv.openai_base_url}"
""")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", board,
                              "--out", bench / "run", "--no-score")
        assert code == 0, out
        azure = [r for r in srv.requests if r.path.startswith("/openai/")]
        vllm = [r for r in srv.requests if r.path == "/v1/chat/completions"]
        assert len(azure) == len(vllm) == 5
        assert {(r.query, r.headers["api-key"], r.body["max_completion_tokens"]) for r in azure} == {
            ("api-version=2025-01-01-preview", "az-team", 200)}
        assert {(r.headers["authorization"], r.body["model"], r.body["max_tokens"]) for r in vllm} == {
            (f"Bearer {PLACEHOLDER_KEY}", "Qwen/Qwen2.5-7B-Instruct", 200)}
        models = {m["name"]: m for m in json.loads((bench / "run" / "run.json").read_text())["models"]}
        assert models["azure-4o-mini"]["options"] == {"api_version": "2025-01-01-preview"}
        assert models["azure-4o-mini"]["endpoint"] != models["vllm:Qwen/Qwen2.5-7B-Instruct"]["endpoint"]
